"""Run summary: latency percentiles, goodput, throughput, shed and error rates.

Definitions (``n`` = requests sent, ``T`` = run span from start to the last completion):

- TTFT: send to first content chunk; TPOT: ``(e2e - ttft) / (output_tokens - 1)``;
  ITL: gaps between content chunks; E2E: send to end of stream. Percentiles are over
  successful requests only (status 200, no error).
- goodput: successful requests with ``ttft <= slo_ttft`` and ``tpot <= slo_tpot`` (a missing
  threshold is not checked; a one-token answer passes the TPOT check) per second of ``T``.
- throughput: successful requests per second and output tokens per second over ``T``.
- shed rate: share of requests answered 429 or 503; error rate: share that failed otherwise.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from loadtests.loadgen.record import RequestRecord
from loadtests.loadgen.stats import percentile_table


@dataclass(frozen=True, slots=True)
class SloThresholds:
    ttft_ms: float | None = None
    tpot_ms: float | None = None

    def met(self, record: RequestRecord) -> bool:
        if not record.ok:
            return False
        if self.ttft_ms is not None and (
            record.ttft_s is None or record.ttft_s * 1000 > self.ttft_ms
        ):
            return False
        tpot = record.tpot_s()
        return self.tpot_ms is None or tpot is None or tpot * 1000 <= self.tpot_ms


def run_span(records: Sequence[RequestRecord]) -> float:
    """Seconds from the run start to the last completion (at least a millisecond)."""
    return max([0.001, *(r.end_s for r in records)])


def _ms(values: Sequence[float]) -> dict[str, float | None]:
    return percentile_table(v * 1000 for v in values)


def latency_tables(records: Sequence[RequestRecord]) -> dict[str, dict[str, float | None]]:
    ok = [r for r in records if r.ok]
    return {
        "ttft_ms": _ms([r.ttft_s for r in ok if r.ttft_s is not None]),
        "tpot_ms": _ms([t for r in ok if (t := r.tpot_s()) is not None]),
        "itl_ms": _ms([gap for r in ok for gap in r.itl_s]),
        "e2e_ms": _ms([r.e2e_s for r in ok if r.e2e_s is not None]),
        "lateness_ms": _ms([max(0.0, r.lateness_s) for r in records]),
    }


def summarise(
    records: Sequence[RequestRecord], slo: SloThresholds, *, by_label: bool = True
) -> dict[str, Any]:
    """The whole summary as plain JSON-able data."""
    n = len(records)
    span = run_span(records)
    ok = [r for r in records if r.ok]
    shed = sum(r.shed for r in records)
    errors = n - len(ok) - shed
    summary: dict[str, Any] = {
        "requests": n,
        "succeeded": len(ok),
        "span_s": span,
        "slo": {"ttft_ms": slo.ttft_ms, "tpot_ms": slo.tpot_ms},
        "goodput_rps": sum(slo.met(r) for r in records) / span,
        "slo_attainment": sum(slo.met(r) for r in records) / n if n else None,
        "throughput_rps": len(ok) / span,
        "output_tokens_per_s": sum(r.output_tokens() for r in ok) / span,
        "shed_rate": shed / n if n else None,
        "error_rate": errors / n if n else None,
        "errors": dict(Counter(r.error for r in records if r.error and not r.shed)),
        "statuses": {str(k): v for k, v in Counter(r.status for r in records).items()},
        **latency_tables(records),
    }
    if by_label:
        labels = sorted({r.label for r in records})
        summary["by_label"] = {
            label: summarise([r for r in records if r.label == label], slo, by_label=False)
            for label in labels
        }
    return summary
