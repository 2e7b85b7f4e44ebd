"""The comparison table: real server against simulator, cell by cell (``workload.py``).

Columns: prompt tokens (the real server's count), concurrency, TTFT p50 and TPOT p50 of each
side in ms and the simulator's relative error; a last line gives the largest absolute error
of each metric and whether all are within ``tolerance`` (0.2).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from loadtests.calibration.workload import pooled


def error(sim: float, real: float) -> float:
    return (sim - real) / real if real else 0.0


def run_spread(runs: Sequence[Sequence[dict[str, Any]]]) -> str:
    """A line saying how far single real runs stray from their pool: the noise floor of
    the comparison on a shared machine."""
    pool = {c["name"]: c for c in pooled(runs)}
    worst = {"ttft_p50_s": 0.0, "tpot_p50_s": 0.0}
    for run in runs:
        for cell in run:
            for key in worst:
                worst[key] = max(worst[key], abs(error(cell[key], pool[cell["name"]][key])))
    return (
        f"Real run to run: the medians of single runs ({len(runs)}) differ from the pooled ones"
        f" by up to {worst['ttft_p50_s']:.0%} (TTFT) and {worst['tpot_p50_s']:.0%} (TPOT).\n"
    )


def markdown(
    real: Sequence[dict[str, Any]], sim: Sequence[dict[str, Any]], tolerance: float = 0.2
) -> str:
    rows = [
        "| cell | prompt tokens | TTFT p50 real ms | TTFT p50 sim ms | error |"
        " TPOT p50 real ms | TPOT p50 sim ms | error |",
        "|---|---|---|---|---|---|---|---|",
    ]
    worst = {"ttft": 0.0, "tpot": 0.0}
    by_name = {c["name"]: c for c in sim}
    for r in real:
        s = by_name[r["name"]]
        e_ttft = error(s["ttft_p50_s"], r["ttft_p50_s"])
        e_tpot = error(s["tpot_p50_s"], r["tpot_p50_s"])
        worst["ttft"] = max(worst["ttft"], abs(e_ttft))
        worst["tpot"] = max(worst["tpot"], abs(e_tpot))
        rows.append(
            f"| {r['name']} | {r['prompt_tokens']} | {r['ttft_p50_s'] * 1000:.0f} |"
            f" {s['ttft_p50_s'] * 1000:.0f} | {e_ttft:+.0%} | {r['tpot_p50_s'] * 1000:.1f} |"
            f" {s['tpot_p50_s'] * 1000:.1f} | {e_tpot:+.0%} |"
        )
    ok = max(worst.values()) <= tolerance
    rows.append("")
    rows.append(
        f"Largest error: TTFT p50 {worst['ttft']:.0%}, TPOT p50 {worst['tpot']:.0%}"
        f" ({'within' if ok else 'NOT within'} {tolerance:.0%})."
    )
    return "\n".join(rows) + "\n"
