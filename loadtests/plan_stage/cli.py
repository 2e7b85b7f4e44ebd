"""Benchmark: the plan stage of an auto-routed request under the difficulty split, per way of
scoring (``python -m loadtests.plan_stage``).

Method: the requests of ``loadtests.routing_cost`` (a short question, a 1,000-token prompt, a
2,000-token review of prose and code, a 6-turn chat), planned by ``plan_pool`` under a policy
with two pools and ``route: auto`` (no tier rules), scored four ways:

- ``heuristic``: ``classify.model.enabled: false``;
- ``default``: the bundled text model (words, word pairs, ten cues), no embedding;
- ``default + embedding``: the same with an embedding the cache stage already made (a fixed
  unit vector here; making one is ``loadtests.cache_cost``'s figure, and the request path's overhead
  in ``loadtests.overhead``);
- ``embedding-only``: the format-1 model of issue 22 with that embedding;
- ``named model (not scored)``: the same request for a model named in the policy (no
  ``route: auto``) on a pool with a context limit: its tokens are counted for the context
  check, and nothing is scored.

The ways are sampled in turn, one call each, ``--calls`` rounds, each call right after
``sched_yield`` (see ``loadtests.routing_cost``'s ``_sample``), so that all four see the same load
on a shared machine and their ratios hold even when the absolute figures move. Prints wall-clock and
thread-CPU p50/p99 in microseconds and each way's p50 over the heuristic's. Target (issue 34): plan
stage p99 at most 300 us for the 2,000-token prompt with the default model, and with a ready
embedding.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from functools import partial
from importlib import resources

import numpy as np
import orjson

from gateway.openai.parse import parse_request
from gateway.openai.request import ParsedRequest
from gateway.path.context import RequestContext
from gateway.path.plan import plan_pool
from gateway.policy import load_policy_text
from loadtests.loadgen.stats import percentile
from loadtests.routing_cost.cli import SPLIT_POLICY, _requests

VECTOR = np.full(384, 384**-0.5, dtype=np.float32)  # the cache stage's embedding


def ways() -> dict[str, tuple[str, np.ndarray | None, str]]:
    """Each way of scoring: the policy text, the embedding the request carries and the model
    it asks for (``named``: a model on the small pool, counted for its context check only)."""
    old = resources.files("gateway.classify").joinpath("data/difficulty_model.json")
    auto = "  auto: {route: auto}\n"
    named = SPLIT_POLICY.replace(auto, auto + "  named: {pool: small}\n")
    return {
        "heuristic": (SPLIT_POLICY + "classify: {model: {enabled: false}}\n", None, "auto"),
        "default": (SPLIT_POLICY, None, "auto"),
        "default + embedding": (SPLIT_POLICY, VECTOR, "auto"),
        "embedding-only": (
            SPLIT_POLICY + f"classify: {{model: {{weights: '{old}'}}}}\n",
            VECTOR,
            "auto",
        ),
        "named model (not scored)": (named, None, "named"),
    }


def interleaved(
    calls: dict[str, Callable[[], object]], rounds: int
) -> dict[str, tuple[list[float], list[float]]]:
    """Wall and thread-CPU microseconds of each call, the calls taken in turn."""
    samples: dict[str, tuple[list[float], list[float]]] = {k: ([], []) for k in calls}
    for fn in calls.values():
        fn()  # warm
    for _ in range(rounds):
        for name, fn in calls.items():
            os.sched_yield()
            start, start_cpu = time.perf_counter(), time.thread_time()
            fn()
            samples[name][1].append((time.thread_time() - start_cpu) * 1e6)
            samples[name][0].append((time.perf_counter() - start) * 1e6)
    return samples


def _parsed(model: str, body: dict[str, object]) -> ParsedRequest:
    return parse_request("chat", orjson.dumps({"model": model, **body}))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m loadtests.plan_stage", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--calls", type=int, default=3000)
    args = parser.parse_args(argv)
    policies = {name: (load_policy_text(t), v, m) for name, (t, v, m) in ways().items()}
    print(f"load average before: {os.getloadavg()[0]:.1f} (2 cores)")
    print(
        "| request | scored by | pool | wall p50 | wall p99 | CPU p50 | CPU p99 | p50 / heuristic |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for request, body in _requests().items():
        contexts = {
            name: RequestContext("bench", 0.0, _parsed(model, body), policy, {}, query_vector=v)
            for name, (policy, v, model) in policies.items()
        }
        samples = interleaved({n: partial(plan_pool, c) for n, c in contexts.items()}, args.calls)
        base = percentile(samples["heuristic"][0], 50) or 1.0
        for name, (wall, cpu) in samples.items():
            pool = plan_pool(contexts[name]).pool.name
            figures = [percentile(v, q) or 0.0 for v in (wall, cpu) for q in (50, 99)]
            cells = " | ".join(f"{f:.1f}" for f in figures)
            print(f"| {request} | {name} | {pool} | {cells} | {figures[0] / base:.2f} |")
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0
