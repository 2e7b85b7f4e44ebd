"""Overhead of every target in front of one fast fake upstream, interleaved.

Method (``loadtests.overhead``'s, widened to any number of OpenAI-compatible URLs): the fake
upstream (``ttft_ms`` to the first token, then ``tokens`` tokens ``itl_ms`` apart) runs as its
own process and every target is started in front of it at once. For each concurrency level,
``c`` closed-loop streaming clients run ``rounds`` rounds of ``round_s`` seconds on each
target in turn (direct, gateway, litellm, ...), so every target sees the same machine noise.
Reported per level and target: TTFT p50/p99 and their ratios to direct, and requests/s. Then
the same rounds with the fake answering at once (a ``fake`` body field the targets pass
through) give the most requests/s each target carries at that concurrency.

Parameters: ``levels``, ``rounds``, ``round_s``, ``fake`` (``FakeTiming``), the targets.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvloop

from gateway.children import running
from loadtests.kit.processes import fake_argv
from loadtests.overhead.measure import (
    Endpoint,
    PathStats,
    flat_payload,
    gateway_policy,
    measure,
    ttft_ms,
)
from loadtests.peers.configs import Upstream
from loadtests.peers.install import Binaries
from loadtests.peers.targets import LAUNCH_ERRORS, Front, Setup, launched, plan_launch, port_of


@dataclass(frozen=True, slots=True)
class FakeTiming:
    ttft_ms: float = 20.0
    tokens: int = 20
    itl_ms: float = 5.0


@dataclass(frozen=True, slots=True)
class OverheadPlan:
    levels: tuple[int, ...] = (1, 16, 64, 128)
    rounds: int = 2
    round_s: float = 3.0
    fake: FakeTiming = FakeTiming()


def level_rows(
    c: int, stats: dict[str, PathStats], flat: dict[str, PathStats]
) -> list[dict[str, Any]]:
    """One row per target at concurrency ``c``; ratios are to ``direct`` when it ran."""
    base = stats.get("direct")
    rows = []
    for name, st in stats.items():
        p50, p99 = ttft_ms(st, 50), ttft_ms(st, 99)
        row: dict[str, Any] = {
            "target": name,
            "concurrency": c,
            "ttft_p50_ms": p50,
            "ttft_p99_ms": p99,
            "rps": round(st.rps(), 1),
            "errors": st.errors,
            "max_rps": round(flat[name].rps(), 1) if name in flat else None,
            "max_rps_errors": flat[name].errors if name in flat else None,
        }
        if base is not None and base.ttft:
            row["p50_ratio"] = round(p50 / ttft_ms(base, 50), 3)
            row["p99_ratio"] = round(p99 / ttft_ms(base, 99), 3)
        rows.append(row)
    return rows


def run_overhead(
    targets: Sequence[str],
    plan: OverheadPlan,
    root: Path,
    base_port: int,
    binaries: Binaries,
    failures: dict[str, str],
) -> list[dict[str, Any]]:
    """Every target up in front of one fake; rows for every level (see the module doc)."""
    fake_port = base_port
    fake_url = f"http://127.0.0.1:{fake_port}"
    front = Front((Upstream(fake_url, "fake-model"),), "bench", "openai", gateway_policy(fake_url))
    setup = Setup(gateway_note="full request path, one backend")
    t = plan.fake
    rows: list[dict[str, Any]] = []
    with ExitStack() as stack:
        stack.enter_context(
            running(fake_argv(fake_port, t.ttft_ms, t.tokens, t.itl_ms), [fake_url + "/health"],
                    root / "fake.log")
        )  # fmt: skip
        endpoints: dict[str, Endpoint] = {}
        for name in targets:
            launch = plan_launch(name, front, setup, port_of(name, base_port), root / name,
                                 binaries)  # fmt: skip
            try:
                stack.enter_context(launched(launch, root / name / "process.log"))
            except LAUNCH_ERRORS as exc:  # the others still run; the report names it
                failures[f"overhead/{name}"] = str(exc)
                continue
            endpoints[name] = Endpoint(launch.url, tuple(launch.headers.items()))
        for c in plan.levels:
            stats = uvloop.run(measure(endpoints, c, plan.rounds, plan.round_s))
            flat = uvloop.run(measure(endpoints, c, plan.rounds, plan.round_s, flat_payload()))
            rows += level_rows(c, stats, flat)
            _progress(rows[-len(endpoints) :])
    return rows


def _progress(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        sys.stderr.write(
            f"[overhead c={r['concurrency']}] {r['target']}: TTFT p50 {r['ttft_p50_ms']} ms "
            f"p99 {r['ttft_p99_ms']} ms, {r['rps']} req/s, max {r['max_rps']} req/s, "
            f"errors {r['errors']}/{r['max_rps_errors']}\n"
        )
