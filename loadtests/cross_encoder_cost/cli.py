"""Benchmark: what one cross-encoder verification costs on this machine's cores.

``python -m loadtests.cross_encoder_cost [--calls 1000] [--threads 1 2]``

Pairs: the fresh near-miss set's questions (``kit/fresh_eval.jsonl``, FAQ-length
questions, both orders), one pair per verification, as the cache asks them. Measured, for
each torch thread count of ``--threads``, interleaved call by call so all see the same
load:
- ``int8``: the model as the gateway runs it (``CrossEncoder.score``: tokenise, the encoder
  with torch's dynamic int8 linear layers, pooling, head);
- ``float32``: the same weights dequantised, no int8 kernels (what quantisation buys);
- ``worker``: the int8 model through the ``CrossWorker`` from an event loop (the thread
  hand-off included), as a lookup waits for it, one at a time, and ``--concurrency``
  lookups at once (each call's wall time, queueing included).
Printed: p50 / p99 / max wall time per verification, the CPU time of the scoring thread
(direct calls), the load average before and after. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gateway.cache.judgement.cross_encoder import (
    CrossEncoder,
    CrossEncoderFile,
    build_encoder,
    dequantise,
    shipped_path,
)
from gateway.cache.judgement.cross_worker import CrossWorker
from loadtests.kit.cache_pairs import FRESH_EVAL, load_written
from loadtests.loadgen.stats import percentile

Pairs = list[tuple[str, str]]


def _pairs() -> Pairs:
    written = load_written(FRESH_EVAL)
    return [(p.a, p.b) for p in written] + [(p.b, p.a) for p in written]


class Float32Model(CrossEncoder):
    """The same weights without the int8 kernels."""

    def __init__(self, weights: CrossEncoderFile) -> None:
        super().__init__(weights)
        self._model = build_encoder(weights.config, dequantise(weights.tensors))


def _line(name: str, wall: Sequence[float], cpu: Sequence[float] | None = None) -> str:
    text = (
        f"{name}: p50 {percentile(wall, 50):6.2f} ms  p99 {percentile(wall, 99):6.2f} ms  "
        f"max {max(wall):6.2f} ms"
    )
    if cpu is not None:
        text += f"; CPU p50 {percentile(cpu, 50):6.2f} ms  p99 {percentile(cpu, 99):6.2f} ms"
    return text


def direct(models: dict[str, Callable[[Pairs], Any]], pairs: Pairs, calls: int) -> None:
    wall: dict[str, list[float]] = {name: [] for name in models}
    cpu: dict[str, list[float]] = {name: [] for name in models}
    for score in models.values():
        score(pairs[:1])  # warm up
    for i in range(calls):
        pair = [pairs[i % len(pairs)]]
        for name, score in models.items():
            t, c = time.perf_counter(), time.thread_time()
            score(pair)
            wall[name].append((time.perf_counter() - t) * 1000)
            cpu[name].append((time.thread_time() - c) * 1000)
    for name in models:
        print("  " + _line(name, wall[name], cpu[name]))


async def through_worker(model: CrossEncoder, pairs: Pairs, calls: int, level: int) -> None:
    worker = CrossWorker(model.score, max_batch=8, max_pending=1024)
    times: list[float] = []
    late = 0

    async def caller(k: int) -> None:
        nonlocal late
        for i in range(k, calls, level):
            a, b = pairs[i % len(pairs)]
            t = time.perf_counter()
            p = await worker.score(a, b, timeout_s=10.0)
            times.append((time.perf_counter() - t) * 1000)
            late += p is None

    await asyncio.gather(*(caller(k) for k in range(level)))
    await worker.close()
    print("  " + _line(f"worker, {level} at once", times) + f"  ({late} without a score)")


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cross-encoder", type=Path, default=None)
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args(argv)
    path = args.cross_encoder or shipped_path()
    if path is None:
        print("cross_encoder_cost: no weights (python -m loadtests.fit.cross_encoder)")
        return 2
    import torch

    weights = CrossEncoderFile.read(Path(path))
    size = Path(path).stat().st_size / 1e6
    print(f"{path}: {size:.1f} MB, {weights.meta.get('layers')} layers")
    pairs = _pairs()
    int8, float32 = CrossEncoder(weights), Float32Model(weights)
    for threads in args.threads:
        torch.set_num_threads(threads)
        print(f"torch threads {threads}, load average before {os.getloadavg()[0]:.2f}:")
        direct({"int8": int8.score, "float32": float32.score}, pairs, args.calls)
        asyncio.run(through_worker(int8, pairs, args.calls, 1))
        asyncio.run(through_worker(int8, pairs, args.calls, args.concurrency))
        print(f"  load average after {os.getloadavg()[0]:.2f}")
    return 0
