"""The cancellation benchmark's rows, table and notes.

``phase_row``: per upstream and phase, trials, detected (count and %), p50/p99/max delay in
ms, the share under the 50 ms target, the gateway's own count and each check's tally.
``notes``: whether the gateway's counts match the trials, and what each check found.
"""

from __future__ import annotations

import argparse
from typing import Any

from loadtests.cancellation.trial import PHASES, TARGET_S, PhaseRun
from loadtests.loadgen.stats import percentile


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value * 1000, 2)


def phase_row(run: PhaseRun, gateway_counts: dict[str, int]) -> dict[str, Any]:
    n = len(run.trials)
    delays = [t.delay_s for t in run.trials if t.delay_s is not None]
    under = sum(d < TARGET_S for d in delays)
    checked = [t.in_phase for t in run.trials if t.in_phase is not None]
    idle = [t.idle_after for t in run.trials if t.idle_after is not None]
    saw = [t.saw_event for t in run.trials if t.saw_event is not None]
    forwarded = [t.forwarded for t in run.trials if t.forwarded is not None]
    polls = [t.poll_s for t in run.trials if t.poll_s is not None]
    return {
        "upstream": run.upstream,
        "phase": run.phase,
        "trials": n,
        "detected": len(delays),
        "detected_pct": round(100 * len(delays) / n, 1) if n else 0.0,
        "p50_ms": _ms(percentile(delays, 50)),
        "p99_ms": _ms(percentile(delays, 99)),
        "max_ms": _ms(max(delays) if delays else None),
        "under_50ms_pct": round(100 * under / n, 1) if n else 0.0,
        "gateway_count": gateway_counts.get(run.phase, 0),
        "in_phase_checked": len(checked),
        "in_phase_ok": sum(checked),
        "idle_checked": len(idle),
        "idle_ok": sum(idle),
        "saw_event_checked": len(saw),
        "saw_event": sum(saw),
        "forwarded_checked": len(forwarded),
        "forwarded": sum(forwarded),
        "poll_p50_ms": _ms(percentile(polls, 50)),
        "poll_max_ms": _ms(max(polls) if polls else None),
        "holders": run.holders,
        "stopped_early": run.stopped_early,
        "seconds": round(run.seconds, 1),
        "delays_ms": [round(d * 1000, 3) for d in delays],
    }


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| upstream | phase | trials | detected | p50 ms | p99 ms | max ms | < 50 ms "
        "| gateway_cancellations_total |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['upstream']} | {r['phase']} | {r['trials']} "
            f"| {r['detected']} ({r['detected_pct']:.1f}%) | {_fmt(r['p50_ms'])} "
            f"| {_fmt(r['p99_ms'])} | {_fmt(r['max_ms'])} | {r['under_50ms_pct']:.1f}% "
            f"| {r['gateway_count']} |"
        )
    return "\n".join(lines)


Counts = dict[str, dict[str, dict[str, int]]]  # upstream -> gateway (main | queued) -> phase


def gateway_of(phase: str) -> str:
    return "queued" if phase == "queued" else "main"


def notes(rows: list[dict[str, Any]], counts: Counts, args: argparse.Namespace) -> list[str]:
    notes = []
    for upstream, gateways in counts.items():
        for kind, by_phase in gateways.items():
            trials = {
                r["phase"]: r["trials"]
                for r in rows
                if r["upstream"] == upstream and gateway_of(r["phase"]) == kind
            }
            shown = ", ".join(f"{p}={by_phase.get(p, 0)}" for p in PHASES)
            # Phases not run on this gateway must count none.
            ok = all(by_phase.get(p, 0) == trials.get(p, 0) for p in PHASES)
            label = "queued gateway (pool limit 1)" if kind == "queued" else "gateway"
            notes.append(
                f"{upstream} {label}: gateway_cancellations_total {shown}; "
                f"trials {', '.join(f'{p}={n}' for p, n in trials.items())} "
                f"({'match' if ok else 'DIFFER'})."
            )
    for r in rows:
        if r["phase"] == "queued":
            where = (
                "its HTTP routes and its engine" if r["upstream"] == "sim" else "its request log"
            )
            notes.append(
                f"{r['upstream']} queued: the slot was held by {r['holders']} long request(s) "
                f"in turn; the upstream received {r['forwarded']}/{r['forwarded_checked']} of "
                f"the queued requests ({where})."
            )
            notes.append(
                f"{r['upstream']} queued: each delay ends when the first /metrics answer "
                "showing gateway_queue_depth 0 arrived (an upper bound); that scrape took p50 "
                f"{_fmt(r['poll_p50_ms'])} ms, max {_fmt(r['poll_max_ms'])} ms."
            )
        if r["in_phase_checked"]:
            notes.append(
                f"{r['upstream']} {r['phase']}: {r['in_phase_ok']}/{r['in_phase_checked']} "
                "aborts came before the engine sampled any token."
            )
        if r["saw_event"]:
            why = (
                " (the simulator sends its role chunk, empty content, before the first token)"
                if r["upstream"] == "sim"
                else ""
            )
            notes.append(
                f"{r['upstream']} {r['phase']}: in {r['saw_event']}/{r['saw_event_checked']} "
                f"trials an SSE event had already reached the client when it left{why}; the "
                "gateway counts a departure as first_token until an event carries output."
            )
        if r["idle_checked"]:
            notes.append(
                f"{r['upstream']} {r['phase']}: engine idle (no tokens produced) after "
                f"{r['idle_ok']}/{r['idle_checked']} trials."
            )
        if r["stopped_early"]:
            notes.append(
                f"{r['upstream']} {r['phase']}: stopped after {args.max_misses} undetected trials."
            )
    return notes
