"""One table row per target and load, from what the clients saw (pure).

Definitions, over the requests a row counts (``n`` of them, first attempts, in plan order):

- goodput: share of the ``n`` served (200, whole stream) with TTFT within their own
  objective (``objective.ttft_objective_s`` of their prompt tokens); ``good_rps`` is the same
  count per second of the arrival window (every target gets the same window).
- admitted TTFT p50 / p99: over served requests, at the client; ``ttft_over_objective_p99``
  is the p99 of TTFT / objective over them (at most 1: 99% of admitted requests in time),
  ``ttft_over_deadline_p99`` the same over each one's deadline (3x its objective).
- shed: share answered 429 or 503; shed beyond the excess load: shed minus the share that
  has to go when arrivals run at ``multiple`` times capacity, ``max(0, 1 - 1/multiple)``.
- client timeouts: requests the client gave up on (no first token within its timeout, or
  the whole answer not within a long allowance after that); errors: any other failure.
- refusal p95 / p99: percentiles of send-to-answer time of the 429/503s, at the client;
  for a target that says how long a refusal waited for a slot (the gateway's
  ``x-gateway-queue-ms``), the same over the refusals decided at arrival (0 ms queued), and
  for those after a wait: how many, how many reached the client past their deadline (send
  to answer over 3x the objective), and the largest send-to-answer / deadline.
- answered in time: share served within objective + 1 s or refused within objective + 1 s.
- Retry-After: refusals that advised a delay, how many the client retried (once, after the
  delay, when it was at most its cap) and how many of those retries were served.
- predictor error: p50 / p90 of the gateway's ``gateway_ttft_prediction_error_seconds``
  histogram (|observed - predicted| backend TTFT, all pools and directions) after the run.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from loadtests.loadgen.record import RequestRecord
from loadtests.loadgen.stats import percentile
from loadtests.slo.objective import DEADLINE_FACTOR, ttft_objective_s
from loadtests.slo.prom import histogram_buckets, histogram_quantile

PREDICTION_ERROR = "gateway_ttft_prediction_error_seconds"
REFUSAL_SPLIT = ("refusal_at_arrival_p95_ms", "refusal_at_arrival_p99_ms", "refusals_after_wait",
                 "refusals_after_wait_late", "refusal_after_wait_worst")  # fmt: skip
ANSWER_GRACE_S = 1.0  # the cold burst's target: answered within objective + 1 s


def excess_share(multiple: float | None) -> float | None:
    """The share of arrivals above capacity at ``multiple`` times it."""
    return None if multiple is None else max(0.0, 1.0 - 1.0 / multiple)


def advised_delay_s(record: RequestRecord) -> float | None:
    """A refusal's Retry-After in seconds (the delta form; a date or none: ``None``)."""
    if not record.shed:
        return None
    value = record.headers.get("retry-after", "").strip()
    try:
        delay = float(value)
    except ValueError:
        return None
    return delay if delay >= 0 else None


def queued_ms(record: RequestRecord) -> float | None:
    """How long a refusal waited for a slot, by its ``x-gateway-queue-ms`` (else ``None``)."""
    try:
        return float(record.headers["x-gateway-queue-ms"]) if record.shed else None
    except (KeyError, ValueError):
        return None


def refusal_split(
    shed: Sequence[RequestRecord], deadline_s: Mapping[int, float] | None = None
) -> dict[str, Any]:
    """Refusals at arrival (their p95 / p99 at the client, ms) and after a wait (how many;
    with ``deadline_s`` by request index, how many came past it and the worst send-to-answer
    over deadline); all ``None`` when no refusal says how long it waited."""
    queued = [(r, q) for r in shed if (q := queued_ms(r)) is not None]
    if not queued:
        return dict.fromkeys(REFUSAL_SPLIT)
    at_once = [r.e2e_s for r, q in queued if q <= 0.0 and r.e2e_s is not None]
    after = [r for r, q in queued if q > 0.0]
    over = [r.e2e_s / deadline_s[r.index] for r in after
            if deadline_s is not None and r.e2e_s is not None]  # fmt: skip
    return {"refusal_at_arrival_p95_ms": _ms(percentile(at_once, 95)),
            "refusal_at_arrival_p99_ms": _ms(percentile(at_once, 99)),
            "refusals_after_wait": len(after),
            "refusals_after_wait_late": None if deadline_s is None else sum(x > 1.0 for x in over),
            "refusal_after_wait_worst": max(over, default=None)}  # fmt: skip


def _in_time(record: RequestRecord, objective_s: float) -> bool:
    return record.ok and record.ttft_s is not None and record.ttft_s <= objective_s


def _answered_in_time(record: RequestRecord, objective_s: float) -> bool:
    limit = objective_s + ANSWER_GRACE_S
    if record.ok:
        return record.ttft_s is not None and record.ttft_s <= limit
    return record.shed and record.e2e_s is not None and record.e2e_s <= limit


def _ms(value: float | None) -> float | None:
    return None if value is None else value * 1000


def predictor_error_ms(metrics_text: str | None) -> tuple[float | None, float | None]:
    """p50 and p90 of the prediction error histogram, ms; ``None`` when absent or empty."""
    if not metrics_text:
        return None, None
    buckets = histogram_buckets(metrics_text, PREDICTION_ERROR)
    return _ms(histogram_quantile(0.5, buckets)), _ms(histogram_quantile(0.9, buckets))


def retry_counts(
    records: Sequence[RequestRecord], retries: Mapping[int, RequestRecord]
) -> dict[str, int]:
    """Refusals with a Retry-After, retries sent and retries served."""
    advised = [r for r in records if advised_delay_s(r) is not None]
    sent = [retries[r.index] for r in advised if r.index in retries]
    return {"advised": len(advised), "retried": len(sent), "admitted": sum(r.ok for r in sent)}


def row_metrics(
    records: Sequence[RequestRecord],
    prompt_tokens: Mapping[int, int],
    *,
    multiple: float | None,
    window_s: float,
    retries: Mapping[int, RequestRecord] | None = None,
    metrics_text: str | None = None,
) -> dict[str, Any]:
    """The row's figures (module docstring); ``prompt_tokens`` by request index."""
    n = len(records)
    objective = {r.index: ttft_objective_s(prompt_tokens[r.index]) for r in records}
    served = [r for r in records if r.ok and r.ttft_s is not None]
    good = sum(_in_time(r, objective[r.index]) for r in records)
    shed = [r for r in records if r.shed]
    ttfts = [r.ttft_s for r in served if r.ttft_s is not None]
    ratios = [r.ttft_s / objective[r.index] for r in served if r.ttft_s is not None]
    over_objective = percentile(ratios, 99)  # the deadline is 3x the objective: p99 / 3
    deadline = {i: DEADLINE_FACTOR * o for i, o in objective.items()}
    refusal_times = [r.e2e_s for r in shed if r.e2e_s is not None]
    timeouts = sum(r.error == "timeout" for r in records)
    others = Counter(r.error or f"http_{r.status}" for r in records
                     if not r.ok and not r.shed and r.error != "timeout")  # fmt: skip
    excess = excess_share(multiple)
    shed_share = len(shed) / n if n else None
    p50, p90 = predictor_error_ms(metrics_text)
    return {
        "sent": n,
        "served": len(served),
        "good": good,
        "goodput": good / n if n else None,
        "good_rps": good / window_s if window_s > 0 else None,
        "ttft_p50_ms": _ms(percentile(ttfts, 50)),
        "ttft_p99_ms": _ms(percentile(ttfts, 99)),
        "ttft_over_objective_p99": over_objective,
        "ttft_over_deadline_p99": (
            None if over_objective is None else over_objective / DEADLINE_FACTOR
        ),
        "shed": shed_share,
        "shed_beyond_excess": (
            None if excess is None or shed_share is None else shed_share - excess
        ),
        "timeouts": timeouts,
        "errors": dict(others),
        "refusal_p95_ms": _ms(percentile(refusal_times, 95)),
        "refusal_p99_ms": _ms(percentile(refusal_times, 99)),
        **refusal_split(shed, deadline),
        "answered_in_time": (
            sum(_answered_in_time(r, objective[r.index]) for r in records) / n if n else None
        ),
        "retry": retry_counts(records, retries) if retries is not None else None,
        "predictor_error_p50_ms": p50,
        "predictor_error_p90_ms": p90,
    }
