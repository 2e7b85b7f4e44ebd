"""The ramp rows: one per level and target, from the client's records and what was watched
(pure).

Per level: requests sent, served, refused (429/503; at arrival, by ``x-gateway-queue-ms`` =
0, and after a wait), client timeouts and other errors, TTFT p50 / p99 of the served ones,
completed requests per second of the level's time, the most requests the engine reported
waiting, and the gateway's refusals by reason (``gateway_shed_total`` at the level's end
minus the previous level's).

Moments, on the ramp's one clock (seconds since the ramp started), each the first within the
level (None: none there):

- ``waiting_at``: the engine's ``/metrics`` first showed ``vllm:num_requests_waiting`` > 0;
- ``rise_at``: the TTFTs rose: the earliest ``sent + threshold`` over the requests whose first
  token came more than ``threshold`` after they were sent (or never came: a client timeout),
  ``threshold`` being ``RISE_FACTOR`` (2) x the target's own TTFT p99 at the ramp's first
  level (where the users fit the engine); refusals do not count as a rise;
- ``refusal_at``: the first refusal reached its client (``sent + e2e``);
- ``saturated_at``: the gateway's ``gateway_pool_state`` first showed a pool saturated or
  overloaded.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from loadtests.loadgen.record import RequestRecord
from loadtests.loadgen.stats import percentile
from loadtests.slo.ramp_run import LevelRun, RampRun
from loadtests.slo.rows import queued_ms
from loadtests.slo.watch import first_state, first_waiting, peak_waiting

RISE_FACTOR = 2.0
_SHED = re.compile(r"^gateway_shed_total\{([^}]*)\}\s+(\S+)")
_REASON = re.compile(r'reason="([^"]*)"')


def shed_by_reason(text: str | None) -> dict[str, float]:
    """The gateway's refusals so far by reason, from its ``/metrics`` text."""
    counts: dict[str, float] = {}
    for line in (text or "").splitlines():
        match = _SHED.match(line)
        reason = _REASON.search(match.group(1)) if match else None
        if match is not None and reason is not None:
            counts[reason.group(1)] = counts.get(reason.group(1), 0.0) + float(match.group(2))
    return counts


def rise_threshold_s(first: Sequence[RequestRecord]) -> float | None:
    """``RISE_FACTOR`` x the TTFT p99 of the first level's served requests."""
    p99 = percentile([r.ttft_s for r in first if r.ok and r.ttft_s is not None], 99)
    return None if p99 is None else RISE_FACTOR * p99


def rise_at(records: Sequence[RequestRecord], threshold_s: float | None) -> float | None:
    """When a request first went ``threshold_s`` without its first token (module doc)."""
    if threshold_s is None:
        return None
    late = [r.sent_s + threshold_s for r in records
            if (r.ok and r.ttft_s is not None and r.ttft_s > threshold_s)
            or r.error == "timeout"]  # fmt: skip
    return min(late, default=None)


def refusal_at(records: Sequence[RequestRecord]) -> float | None:
    return min((r.end_s for r in records if r.shed), default=None)


def _ms(value: float | None) -> float | None:
    return None if value is None else value * 1000


def _delta(now: Mapping[str, float], before: Mapping[str, float]) -> dict[str, int]:
    return {k: round(v - before.get(k, 0.0)) for k, v in now.items() if v > before.get(k, 0.0)}


def level_row(lv: LevelRun, run: RampRun, threshold_s: float | None,
              shed_before: Mapping[str, float]) -> dict[str, Any]:  # fmt: skip
    records = lv.records
    served = [r for r in records if r.ok and r.ttft_s is not None]
    ttfts = [r.ttft_s for r in served if r.ttft_s is not None]
    shed = [r for r in records if r.shed]
    waits = [queued_ms(r) for r in shed]
    others = Counter(r.error or f"http_{r.status}" for r in records
                     if not r.ok and not r.shed and r.error != "timeout")  # fmt: skip
    span = lv.end_s - lv.start_s
    waiting = first_waiting(run.watched.engine, lv.start_s)
    saturated = first_state(run.watched.gateway, lv.start_s)
    return {
        "load": lv.level.load, "concurrency": lv.level.concurrency,
        "prompt_tokens": lv.level.prompt_tokens,
        "start_s": lv.start_s, "end_s": lv.end_s,
        "sent": len(records), "served": len(served), "refused": len(shed),
        "refused_at_arrival": sum(q is not None and q <= 0 for q in waits),
        "refused_after_wait": sum(q is not None and q > 0 for q in waits),
        "timeouts": sum(r.error == "timeout" for r in records), "errors": dict(others),
        "ttft_p50_ms": _ms(percentile(ttfts, 50)), "ttft_p99_ms": _ms(percentile(ttfts, 99)),
        "rps": len(served) / span if span > 0 else None,
        "engine_waiting_peak": peak_waiting(run.watched.engine, lv.start_s, lv.end_s),
        "waiting_at": waiting if waiting is not None and waiting < lv.end_s else None,
        "rise_threshold_ms": _ms(threshold_s),
        "rise_at": rise_at(records, threshold_s),
        "refusal_at": refusal_at(records),
        "saturated_at": saturated if saturated is not None and saturated < lv.end_s else None,
        "shed_reasons": _delta(shed_by_reason(lv.metrics_text), shed_before),
    }  # fmt: skip


def ramp_rows(scenario: str, target: str, run: RampRun) -> list[dict[str, Any]]:
    """One row per level, in order (see the module doc)."""
    if not run.levels:
        return []
    threshold = rise_threshold_s(run.levels[0].records)
    rows: list[dict[str, Any]] = []
    before: dict[str, float] = {}
    for lv in run.levels:
        row = level_row(lv, run, threshold, before)
        rows.append({"scenario": scenario, "target": target, "status": None, **row})
        before = shed_by_reason(lv.metrics_text) or before
    return rows
