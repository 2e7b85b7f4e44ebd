"""A complete load run from a workload file to written reports (shared by both CLIs)."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loadtests.loadgen.client import ClientConfig, Target
from loadtests.loadgen.plan import bounds_for, plan_requests
from loadtests.loadgen.report import write_run_report
from loadtests.loadgen.request import PlannedRequest
from loadtests.loadgen.runner import RunOptions, RunResult, execute
from loadtests.loadgen.sampler import DEFAULT_GAUGES
from loadtests.loadgen.summary import SloThresholds, summarise
from loadtests.loadgen.workload import Workload, load_workload


@dataclass(frozen=True, slots=True)
class LoadSpec:
    workload: Path
    seed: int = 0
    rate: float | None = None
    duration_s: float | None = None
    max_requests: int | None = None
    slo_ttft_ms: float | None = None
    slo_tpot_ms: float | None = None
    request_timeout_s: float = 120.0
    model_map: Mapping[str, str] = field(default_factory=dict)
    plots: bool = True


def parse_pairs(text: str | None) -> dict[str, str]:
    """``"a=b,c=d"`` → ``{"a": "b", "c": "d"}``; the value may itself contain ``=``."""
    out: dict[str, str] = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ValueError(f"expected KEY=VALUE, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def direct_targets(text: str) -> list[Target]:
    """``URL=MODEL,URL=MODEL`` → round-robin targets sending each backend's served model."""
    pairs: list[Target] = []
    for item in text.split(","):
        url, sep, model = item.strip().rpartition("=")
        if not sep or not url or not model:
            raise ValueError(f"expected URL=MODEL, got {item!r}")
        pairs.append(Target(url, model))
    return pairs


def slo_for(spec: LoadSpec, workload: Workload) -> SloThresholds:
    return SloThresholds(
        ttft_ms=spec.slo_ttft_ms if spec.slo_ttft_ms is not None else workload.slo.ttft_ms,
        tpot_ms=spec.slo_tpot_ms if spec.slo_tpot_ms is not None else workload.slo.tpot_ms,
    )


def build_plan(spec: LoadSpec, workload: Workload) -> list[PlannedRequest]:
    bounds = bounds_for(workload, spec.duration_s, spec.max_requests)
    plan = plan_requests(workload, spec.seed, bounds, spec.rate)
    if not spec.model_map:
        return plan
    return [dataclasses.replace(r, model=spec.model_map.get(r.model, r.model)) for r in plan]


def perform(
    spec: LoadSpec,
    targets: Sequence[Target],
    out_dir: Path | None,
    *,
    mode: str,
    metrics_urls: Sequence[str] = (),
    gauges: Sequence[str] = DEFAULT_GAUGES,
) -> tuple[dict[str, Any], RunResult]:
    """Plan, run (blocking, own event loop), summarise and optionally write reports."""
    workload = load_workload(spec.workload)
    plan = build_plan(spec, workload)
    options = RunOptions(
        client=ClientConfig(targets=list(targets), request_timeout_s=spec.request_timeout_s),
        metrics_urls=list(metrics_urls),
        gauges=list(gauges),
    )
    result = asyncio.run(execute(plan, options))
    summary = summarise(result.records, slo_for(spec, workload))
    summary["wall_s"] = result.wall_s
    summary["gateway_headers"] = header_counts(result)
    meta = {
        "workload": workload.name,
        "mode": mode,
        "seed": spec.seed,
        "rate": spec.rate,
        "targets": [dataclasses.asdict(t) for t in targets],
        "planned": len(plan),
    }
    if out_dir is not None:
        write_run_report(out_dir, result.records, result.samples, summary, meta, plots=spec.plots)
    return summary, result


def header_counts(result: RunResult) -> dict[str, dict[str, int]]:
    """How often each value of the categorical gateway headers was seen."""
    counts: dict[str, dict[str, int]] = {}
    for record in result.records:
        for key in ("x-gateway-pool", "x-gateway-cache", "x-gateway-backend"):
            if key in record.headers:
                per = counts.setdefault(key, {})
                per[record.headers[key]] = per.get(record.headers[key], 0) + 1
    return counts
