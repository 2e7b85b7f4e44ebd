"""Markdown of the ramp rows: one line per level and target (pure).

Columns are ``loadtests.slo.ramp_rows``' figures; ``p99 vs direct`` is the TTFT p99 over
direct's at the same level; moments are seconds since the target's ramp started (each the
first within that level). A target that did not start gets a line saying why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from loadtests.loadgen.stats import ratio
from loadtests.slo.tables import times

Row = Mapping[str, Any]

HEADER = (
    "| level | target | sent | served | refused: at arrival / after a wait | refusals by reason "
    "| client timeouts | other errors | TTFT p50 / p99 ms | p99 vs direct | served / s "
    "| engine waiting: most | engine waiting first s | TTFT rise s (threshold ms) "
    "| first refusal s | pool saturated s |"
)
COLUMNS = HEADER.count("|") - 1


def _num(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _direct_p99(rows: Sequence[Row], row: Row) -> float | None:
    for r in rows:
        if r["target"] == "direct" and r["load"] == row["load"] and r.get("status") is None:
            return r["ttft_p99_ms"]  # type: ignore[no-any-return]
    return None


def _pairs(counts: Mapping[str, int] | None) -> str:
    if not counts:
        return "-"
    return ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))


def _cells(rows: Sequence[Row], r: Row) -> list[str]:
    rise = "-" if r["rise_at"] is None else (f"{r['rise_at']:.2f} ({_num(r['rise_threshold_ms'])})")
    return [
        str(r["load"]), str(r["target"]), str(r["sent"]), str(r["served"]),
        f"{r['refused']}: {r['refused_at_arrival']} / {r['refused_after_wait']}",
        _pairs(r.get("shed_reasons")), str(r["timeouts"]), _pairs(r.get("errors")),
        f"{_num(r['ttft_p50_ms'])} / {_num(r['ttft_p99_ms'])}",
        times(ratio(r["ttft_p99_ms"], _direct_p99(rows, r))), _num(r["rps"], 1),
        _num(r["engine_waiting_peak"]), _num(r["waiting_at"], 2), rise,
        _num(r["refusal_at"], 2), _num(r["saturated_at"], 2),
    ]  # fmt: skip


def ramp_table(rows: Sequence[Row]) -> str:
    """One ramp's rows, level by level (levels and targets in the order they came)."""
    levels = list(dict.fromkeys(r["load"] for r in rows))
    lines = [HEADER, "|" + "---|" * COLUMNS]
    for r in sorted(rows, key=lambda r: levels.index(r["load"])):
        if r.get("status") is not None:
            cells = [str(r["load"]), str(r["target"]), str(r["status"]), *["-"] * (COLUMNS - 3)]
        else:
            cells = _cells(rows, r)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
