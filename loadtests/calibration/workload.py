"""The calibration workload and its measurement against any OpenAI-compatible server.

Cells: every prompt length in ``lengths`` (words of ``prompts.filler``, one token each, after
a nonce that defeats the prefix cache) at every concurrency in ``concurrencies``, closed
loop: ``concurrency`` workers each send ``rounds`` streaming ``/v1/completions`` requests of
``max_tokens`` tokens (``ignore_eos``), one after the other, after one unmeasured warm-up
request per cell. One more cell measures prefix hits: the same prompt of ``hit_length`` words
(no nonce) sent ``rounds + 1`` times in a row, the first one unmeasured. The whole list of
cells is run ``passes`` times.

Per request: TTFT (request sent to first non-empty text), TPOT ((last token - first token) /
(tokens - 1), tokens from the usage chunk) and the prompt tokens the server counted. Per cell:
the medians.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import httpx2 as httpx
import orjson

from loadtests.real.prompts import filler


@dataclass(frozen=True, slots=True)
class Plan:
    lengths: tuple[int, ...] = (16, 256, 1024, 2048)
    concurrencies: tuple[int, ...] = (1, 4)
    rounds: int = 3
    max_tokens: int = 32
    hit_length: int = 1024
    passes: int = 1

    @classmethod
    def from_dict(cls, found: dict[str, Any]) -> Plan:
        """The plan ``dataclasses.asdict`` wrote (JSON turns its tuples into lists)."""
        return cls(
            lengths=tuple(found["lengths"]),
            concurrencies=tuple(found["concurrencies"]),
            rounds=int(found["rounds"]),
            max_tokens=int(found["max_tokens"]),
            hit_length=int(found["hit_length"]),
            passes=int(found["passes"]),
        )


@dataclass(frozen=True, slots=True)
class Sample:
    ttft_s: float
    tpot_s: float
    prompt_tokens: int


@dataclass(slots=True)
class Cell:
    name: str  # e.g. "L1024 c4" or "hit L1024 c1"
    length: int
    concurrency: int
    prefix_hit: bool
    samples: list[Sample] = field(default_factory=list)

    def p50(self, attr: str) -> float:
        return float(statistics.median(float(getattr(s, attr)) for s in self.samples))

    def summary(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "length": self.length,
            "concurrency": self.concurrency,
            "prefix_hit": self.prefix_hit,
            "prompt_tokens": round(self.p50("prompt_tokens")),
            "ttft_p50_s": self.p50("ttft_s"),
            "tpot_p50_s": self.p50("tpot_s"),
            "samples": [asdict(s) for s in self.samples],
        }


async def one_request(
    http: httpx.AsyncClient, url: str, model: str, prompt: str, max_tokens: int
) -> Sample:
    body = {
        "model": model,
        "prompt": prompt,
        "max_tokens": max_tokens,
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"include_usage": True},
        "temperature": 0,
    }
    start = time.monotonic()
    first = last = 0.0
    usage: dict[str, Any] = {}
    async with http.stream("POST", url + "/v1/completions", json=body) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if not line.startswith("data: {"):
                continue
            event = orjson.loads(line[6:])
            if event.get("choices") and event["choices"][0].get("text"):
                last = time.monotonic()
                first = first or last
            usage = event.get("usage") or usage
    tokens = int(usage["completion_tokens"])
    tpot = (last - first) / (tokens - 1) if tokens > 1 else 0.0
    return Sample(first - start, tpot, int(usage["prompt_tokens"]))


async def measure_cell(
    http: httpx.AsyncClient, url: str, model: str, plan: Plan, cell: Cell
) -> Cell:
    def prompt() -> str:
        return filler(cell.length, nonce=not cell.prefix_hit)

    await one_request(http, url, model, prompt(), plan.max_tokens)  # warm-up / cache fill

    async def worker() -> list[Sample]:
        return [
            await one_request(http, url, model, prompt(), plan.max_tokens)
            for _ in range(plan.rounds)
        ]

    for found in await asyncio.gather(*(worker() for _ in range(cell.concurrency))):
        cell.samples.extend(found)
    return cell


def pooled(runs: Sequence[Sequence[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Cell summaries of several runs of one plan with their samples pooled per cell (in the
    first run's order) and the medians recomputed over the pool."""
    merged: dict[str, Cell] = {}
    for run in runs:
        for found in run:
            cell = merged.setdefault(
                found["name"],
                Cell(found["name"], found["length"], found["concurrency"], found["prefix_hit"]),
            )
            cell.samples.extend(Sample(**sample) for sample in found["samples"])
    return [cell.summary() for cell in merged.values()]


def cells(plan: Plan) -> list[Cell]:
    grid = [
        Cell(f"L{n} c{c}", n, c, prefix_hit=False) for n in plan.lengths for c in plan.concurrencies
    ]
    return [*grid, Cell(f"hit L{plan.hit_length} c1", plan.hit_length, 1, prefix_hit=True)]


async def measure(url: str, model: str, plan: Plan) -> list[dict[str, Any]]:
    """Every cell of ``plan`` against the server at ``url``, one cell after the other, the
    whole list ``plan.passes`` times (samples pooled per cell, so that a burst of load on a
    shared machine lands on a part of each cell's samples, not on a whole cell)."""
    async with httpx.AsyncClient(timeout=600) as http:
        grid = cells(plan)
        for _ in range(plan.passes):
            for cell in grid:
                await measure_cell(http, url, model, plan, cell)
                print(
                    f"{cell.name}: TTFT p50 {cell.p50('ttft_s') * 1000:.0f} ms, "
                    f"TPOT p50 {cell.p50('tpot_s') * 1000:.1f} ms ({len(cell.samples)})",
                    flush=True,
                )
        return [cell.summary() for cell in grid]
