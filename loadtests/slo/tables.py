"""Markdown of the SLO benchmark: one table per scenario, and the targets' verdicts (pure).

Columns are ``loadtests.slo.rows``' figures; ``vs direct`` is the row's goodput over direct's
on the same arrivals. A target that did not start gets a row saying why.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from loadtests.loadgen.stats import ratio
from loadtests.peers.tables import Check, checks_table

Row = Mapping[str, Any]

HEADER = (
    "| load | target | sent | goodput | vs direct | admitted TTFT p50 / p99 ms "
    "| p99 TTFT / objective | p99 TTFT / deadline | shed | shed beyond excess "
    "| client timeouts | other errors | refusal p95 / p99 ms | at arrival: p95 ms "
    "| after a wait: n (past deadline) | answered in time | Retry-After retries served "
    "| predictor error p50 / p90 ms |"
)
COLUMNS = HEADER.count("|") - 1


def _num(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _signed_pct(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1%}"


def times(value: float | None) -> str:
    """A ratio as ``1.23x`` (``inf``: the other side had none)."""
    if value is None:
        return "-"
    return "inf" if math.isinf(value) else f"{value:.2f}x"


def _retry(row: Row) -> str:
    retry = row.get("retry")
    if retry is None:
        return "-"
    if retry["advised"] == 0:
        return "no Retry-After"
    rate = retry["admitted"] / retry["advised"]
    return f"{rate:.1%} ({retry['admitted']}/{retry['advised']})"


def _predictor(row: Row) -> str:
    if not str(row["target"]).startswith("gateway"):
        return "-"
    p50, p90 = row.get("predictor_error_p50_ms"), row.get("predictor_error_p90_ms")
    if p50 is None or p90 is None:
        return "n/a"
    return f"{p50:,.0f} / {p90:,.0f}"


def _errors(row: Row) -> str:
    errors: Mapping[str, int] = row.get("errors") or {}
    if not errors:
        return "0"
    return ", ".join(f"{n} {kind}" for kind, n in sorted(errors.items()))


def _direct_goodput(rows: Sequence[Row], row: Row) -> float | None:
    for r in rows:
        same = r["load"] == row["load"] and r["scenario"] == row["scenario"]
        if r["target"] == "direct" and same and r.get("status") is None:
            return r["goodput"]  # type: ignore[no-any-return]
    return None


def _vs_direct(rows: Sequence[Row], row: Row) -> str:
    return times(ratio(row["goodput"], _direct_goodput(rows, row)))


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _after_wait(row: Row) -> str:
    after = row.get("refusals_after_wait")
    if after is None:
        return "-"
    late = row.get("refusals_after_wait_late")
    return f"{after} ({'-' if late is None else late})"


def _cells(rows: Sequence[Row], r: Row) -> list[str]:
    return [
        str(r["load"]), str(r["target"]), str(r["sent"]), _pct(r["goodput"]), _vs_direct(rows, r),
        f"{_num(r['ttft_p50_ms'])} / {_num(r['ttft_p99_ms'])}",
        _ratio(r["ttft_over_objective_p99"]), _ratio(r.get("ttft_over_deadline_p99")),
        _pct(r["shed"]), _signed_pct(r["shed_beyond_excess"]), str(r["timeouts"]), _errors(r),
        f"{_num(r.get('refusal_p95_ms'), 1)} / {_num(r['refusal_p99_ms'], 1)}",
        _num(r.get("refusal_at_arrival_p95_ms"), 1), _after_wait(r),
        _pct(r["answered_in_time"]), _retry(r), _predictor(r),
    ]  # fmt: skip


def scenario_table(rows: Sequence[Row]) -> str:
    """One scenario's rows in the order given."""
    lines = [HEADER, "|" + "---|" * COLUMNS]
    for r in rows:
        if r.get("status") is not None:
            rest = ["-"] * (COLUMNS - 3)
            cells = [str(r["load"]), str(r["target"]), str(r["status"]), *rest]
        else:
            cells = _cells(rows, r)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def verdicts_table(checks: Sequence[Check]) -> str:
    return checks_table(checks, "target (gateway, default policy)",
                        ("met", "not met", "not measured"))  # fmt: skip
