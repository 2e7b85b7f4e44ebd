"""Markdown tables and target checks of the peer comparison (pure functions of the rows).

Inputs are the suites' rows: overhead rows (target, concurrency, TTFT p50/p99, ratios to
direct, req/s, max req/s), load rows (``load_row``: one per scenario, load and target, from a
run summary), cancellation rows (``loadtests.cancellation.report.phase_row`` plus ``target``; a row
with only ``phase`` and ``target`` is a phase the target cannot be in). ``check_targets``
evaluates issue 12's three targets against those rows, each with the measured numbers.

Parameters: ``notes`` (each target's configuration, from ``Setup.notes``), ``peers`` (the
targets that count as peers), ``gateway`` (our target's name).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

PEERS = ("litellm", "vllm-router", "nginx")
Row = Mapping[str, Any]


def _num(value: Any, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:,.{digits}f}"


def _pct(value: Any) -> str:
    return "-" if value is None else f"{value:.1%}"


def load_row(scenario: str, load: str, target: str, summary: Mapping[str, Any]) -> dict[str, Any]:
    """The figures of one load run that the tables show."""
    ttft = summary.get("ttft_ms") or {}
    counters = summary.get("fleet_counters") or {}
    hits, queries = (
        counters.get("vllm:prefix_cache_hits_total"),
        counters.get("vllm:prefix_cache_queries_total"),
    )
    return {
        "scenario": scenario,
        "load": load,
        "target": target,
        "requests": summary.get("requests"),
        "ttft_p50_ms": ttft.get("p50"),
        "ttft_p99_ms": ttft.get("p99"),
        "goodput_rps": summary.get("goodput_rps"),
        "shed_rate": summary.get("shed_rate"),
        "error_rate": summary.get("error_rate"),
        "errors": summary.get("errors") or {},
        "prefix_hit_rate": hits / queries if hits is not None and queries else None,
    }


def overhead_table(rows: Sequence[Row]) -> str:
    lines = [
        "| c | target | TTFT p50 / p99 ms | vs direct p50 / p99 | req/s (20 ms fake) "
        "| max req/s (zero-delay fake) | errors |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ratio = f"{r['p50_ratio']:.2f}x / {r['p99_ratio']:.2f}x" if "p50_ratio" in r else "-"
        lines.append(
            f"| {r['concurrency']} | {r['target']} | {_num(r['ttft_p50_ms'], 2)} / "
            f"{_num(r['ttft_p99_ms'], 2)} | {ratio} | {_num(r['rps'])} | {_num(r['max_rps'])} "
            f"| {r['errors']} / {r.get('max_rps_errors', 0)} |"
        )
    return "\n".join(lines)


def bursty_table(rows: Sequence[Row], notes: Mapping[str, str]) -> str:
    lines = [
        "| load | target | configuration | admitted TTFT p50 / p99 ms | goodput req/s "
        "| shed | errors |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['load']} | {r['target']} | {notes.get(r['target'], '')} "
            f"| {_num(r['ttft_p50_ms'], 0)} / {_num(r['ttft_p99_ms'], 0)} "
            f"| {_num(r['goodput_rps'], 2)} | {_pct(r['shed_rate'])} | {_pct(r['error_rate'])} |"
        )
    return "\n".join(lines)


def prefix_table(rows: Sequence[Row], notes: Mapping[str, str]) -> str:
    lines = [
        "| target | configuration | prefix hit rate | TTFT p50 / p99 ms | goodput req/s | errors |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['target']} | {notes.get(r['target'], '')} | {_pct(r['prefix_hit_rate'])} "
            f"| {_num(r['ttft_p50_ms'], 0)} / {_num(r['ttft_p99_ms'], 0)} "
            f"| {_num(r['goodput_rps'], 2)} | {_pct(r['error_rate'])} |"
        )
    return "\n".join(lines)


def cancel_table(rows: Sequence[Row]) -> str:
    lines = [
        "| target | phase | detected within bound | p50 ms | p99 ms | max ms |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "trials" not in r:
            lines.append(f"| {r['target']} | {r['phase']} | n/a (no admission queue) | - | - | - |")
            continue
        lines.append(
            f"| {r['target']} | {r['phase']} | {r['detected']}/{r['trials']} "
            f"| {_num(r['p50_ms'], 2)} | {_num(r['p99_ms'], 2)} | {_num(r['max_ms'], 2)} |"
        )
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    met: bool | None  # None: not measured in this run
    detail: str


def _overhead_check(rows: Sequence[Row], gateway: str) -> Check:
    name = "overhead p50 within 1.10x of direct at c=64"
    row = next((r for r in rows if r["target"] == gateway and r["concurrency"] == 64), None)
    if row is None or "p50_ratio" not in row:
        return Check(name, None, "not measured (needs direct and the gateway at c=64)")
    return Check(name, row["p50_ratio"] <= 1.10, f"{row['p50_ratio']:.3f}x")


def best_max_rps(rows: Sequence[Row], target: str) -> float | None:
    values = [r["max_rps"] for r in rows if r["target"] == target and r.get("max_rps")]
    return max(values) if values else None


def _rps_check(rows: Sequence[Row], gateway: str) -> Check:
    name = "at least 10x LiteLLM's maximum requests/s"
    ours, theirs = best_max_rps(rows, gateway), best_max_rps(rows, "litellm")
    if ours is None or theirs is None:
        return Check(name, None, "not measured (needs the gateway and litellm)")
    return Check(
        name, ours >= 10 * theirs, f"{ours:,.0f} vs {theirs:,.0f} req/s = {ours / theirs:.1f}x"
    )


def _p99_check(rows: Sequence[Row], gateway: str, load: str) -> Check:
    name = f"at least 1.5x lower admitted p99 TTFT than every peer (bursty {load})"
    at = {r["target"]: r["ttft_p99_ms"] for r in rows if r["load"] == load}
    ours = at.get(gateway)
    peers = {p: v for p, v in at.items() if p in PEERS and v is not None}
    if ours is None or not peers:
        return Check(name, None, "not measured (needs the gateway and a peer)")
    parts = [f"{p} {v:,.0f} ms ({v / ours:.2f}x)" for p, v in peers.items()]
    met = all(v >= 1.5 * ours for v in peers.values())
    return Check(name, met, f"gateway {ours:,.0f} ms; " + ", ".join(parts))


def check_targets(
    overhead: Sequence[Row], bursty: Sequence[Row], gateway: str = "gateway", load: str = "3x"
) -> list[Check]:
    return [
        _overhead_check(overhead, gateway),
        _rps_check(overhead, gateway),
        _p99_check(bursty, gateway, load),
    ]


def checks_table(
    checks: Sequence[Check],
    header: str = "target",
    verdicts: tuple[str, str, str] = ("yes", "**no**", "not run"),  # met, missed, unmeasured
) -> str:
    lines = [f"| {header} | met | measured |", "|---|---|---|"]
    for c in checks:
        met = verdicts[2] if c.met is None else (verdicts[0] if c.met else verdicts[1])
        lines.append(f"| {c.name} | {met} | {c.detail} |")
    return "\n".join(lines)


def _by_target(rows: Sequence[Row]) -> dict[str, list[Row]]:
    out: dict[str, list[Row]] = {}
    for r in rows:
        out.setdefault(str(r["target"]), []).append(r)
    return out


def compact_overhead(rows: Sequence[Row]) -> str:
    """One row per target: TTFT p50 ratio to direct per level, and the best max req/s."""
    levels = sorted({int(r["concurrency"]) for r in rows})
    head = " | ".join(f"c={c}" for c in levels)
    lines = [f"| target | TTFT p50 vs direct: {head} | max req/s |",
             "|---|" + "---|" * (len(levels) + 1)]  # fmt: skip
    for name, mine in _by_target(rows).items():
        at = {int(r["concurrency"]): r for r in mine}
        ratios = [f"{at[c]['p50_ratio']:.2f}x" if c in at and "p50_ratio" in at[c] else "-"
                  for c in levels]  # fmt: skip
        lines.append(
            f"| {name} | " + " | ".join(ratios) + f" | {_num(best_max_rps(rows, name), 0)} |"
        )
    return "\n".join(lines)


def compact_bursty(rows: Sequence[Row]) -> str:
    """One row per target: admitted p99 TTFT, goodput, shed and errors at each load."""
    loads = list(dict.fromkeys(str(r["load"]) for r in rows))
    head = " | ".join(f"{load}: p99 ms / goodput / shed / errors" for load in loads)
    lines = [f"| target | {head} |", "|---|" + "---|" * len(loads)]
    for name, mine in _by_target(rows).items():
        at = {str(r["load"]): r for r in mine}
        cells = [
            f"{_num(at[x]['ttft_p99_ms'], 0)} / {_num(at[x]['goodput_rps'], 2)} / "
            f"{_pct(at[x]['shed_rate'])} / {_pct(at[x]['error_rate'])}"
            if x in at
            else "-"
            for x in loads
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def compact_cancel(rows: Sequence[Row]) -> str:
    """One row per target: p50 ms per phase, ``n/a`` or how many trials were missed."""
    phases = list(dict.fromkeys(str(r["phase"]) for r in rows))
    lines = ["| target | " + " | ".join(phases) + " |", "|---|" + "---|" * len(phases)]
    for name, mine in _by_target(rows).items():
        at = {str(r["phase"]): r for r in mine}
        cells = []
        for phase in phases:
            r = at.get(phase)
            if r is None or "trials" not in r:
                cells.append("n/a")
            elif r["detected"] < r["trials"]:
                cells.append(f"{_num(r['p50_ms'], 2)} ({r['trials'] - r['detected']} of "
                             f"{r['trials']} missed)")  # fmt: skip
            else:
                cells.append(_num(r["p50_ms"], 2))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
