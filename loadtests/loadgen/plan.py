"""Turn a workload and a seed into the full, deterministic request sequence.

Algorithm: three independent RNG streams derived from the seed (arrivals, class choice and
per-request content) so that changing, say, the rate does not reshuffle prompt contents more
than needed. Request ``i`` picks its class by ``weight`` and builds its messages with the
class builder; ``max_tokens`` is drawn from the class's output-length distribution. A trace
workload instead replays its JSONL lines (``t`` plus request fields, optional ``label`` and
``headers``; other fields are passed through in the body).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import orjson

from loadtests.loadgen.arrivals import Bounds, Trace, schedule
from loadtests.loadgen.builders import make_builder
from loadtests.loadgen.request import PlannedRequest
from loadtests.loadgen.workload import Workload

_BODY_KEYS = ("model", "messages", "max_tokens", "temperature", "stream", "stream_options")


def bounds_for(
    workload: Workload, duration_s: float | None = None, max_requests: int | None = None
) -> Bounds:
    """CLI values override the workload's own bounds."""
    return Bounds(
        duration_s=duration_s if duration_s is not None else workload.duration_s,
        max_requests=max_requests if max_requests is not None else workload.max_requests,
    )


def plan_requests(
    workload: Workload, seed: int, bounds: Bounds, rate: float | None = None
) -> list[PlannedRequest]:
    """The request sequence of ``workload`` under ``seed``; equal inputs give equal output."""
    arrival = workload.arrival if rate is None else workload.arrival.with_rate(rate)
    if isinstance(arrival, Trace):
        return read_trace(Path(arrival.path), workload, bounds)
    offsets = schedule(arrival, random.Random(f"{seed}:arrivals"), bounds)
    return synthesise(workload, seed, offsets)


def synthesise(workload: Workload, seed: int, offsets: list[float]) -> list[PlannedRequest]:
    """Requests of the workload's classes at the given offsets (deterministic per seed)."""
    builders = [make_builder(c, seed) for c in workload.classes]
    weights = [c.weight for c in workload.classes]
    pick = random.Random(f"{seed}:classes")
    content = random.Random(f"{seed}:content")
    out: list[PlannedRequest] = []
    for i, at_s in enumerate(offsets):
        k = pick.choices(range(len(builders)), weights=weights, k=1)[0]
        cls = workload.classes[k]
        prompt = builders[k](content, at_s)
        headers = {**workload.headers, **cls.headers, **prompt.headers}
        if cls.priority:
            headers["x-gateway-priority"] = cls.priority
        temperature = cls.temperature if cls.temperature is not None else workload.temperature
        out.append(
            PlannedRequest(
                index=i,
                at_s=at_s,
                label=cls.name,
                model=cls.model or workload.model,
                messages=prompt.messages,
                max_tokens=cls.output_tokens.sample(content),
                temperature=temperature,
                headers=headers,
            )
        )
    return out


def read_trace(path: Path, workload: Workload, bounds: Bounds) -> list[PlannedRequest]:
    """Replay a JSONL trace in time order (stable for equal ``t``), within ``bounds``."""
    rows = [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    rows.sort(key=lambda row: float(row["t"]))
    out: list[PlannedRequest] = []
    for row in rows:
        at_s = float(row["t"])
        if not bounds.admits(len(out), at_s):
            break
        out.append(_trace_request(len(out), at_s, row, workload))
    return out


def _trace_request(index: int, at_s: float, row: dict[str, Any], wl: Workload) -> PlannedRequest:
    extra = {k: v for k, v in row.items() if k not in (*_BODY_KEYS, "t", "label", "headers")}
    return PlannedRequest(
        index=index,
        at_s=at_s,
        label=str(row.get("label", "trace")),
        model=str(row.get("model", wl.model)),
        messages=list(row["messages"]),
        max_tokens=int(row.get("max_tokens", 128)),
        temperature=float(row.get("temperature", wl.temperature)),
        headers={**wl.headers, **row.get("headers", {})},
        extra=extra,
    )
