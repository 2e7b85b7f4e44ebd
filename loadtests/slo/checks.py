"""Issue 18's targets for the gateway under its DEFAULT policy, checked against the rows.

Each check says met (True), missed (False) or not measured (None: no row to judge), with the
measured figures. Rows are ``loadtests.slo.rows`` figures plus ``scenario``, ``load``,
``multiple``, ``target`` and ``status`` (``None`` when the target ran).

1. At 1x or less: shed at most 1% and goodput at least 0.98x direct's. (Shown beside it:
   the share direct serves late or not at all on the same arrivals, what would have to be
   served late to shed less.)
2. From 2x to 5x: admitted p99 TTFT within the objective (p99 of TTFT / objective <= 1).
3. At 3x: goodput at least 2x direct's.
4. From 2x to 5x: goodput at least every peer's.
5. Cold burst: every request answered (served or refused) within its objective + 1 s, and
   no client timeout.
6. Refusals: p99 under 20 ms at the client, in every row with refusals. (Shown beside it:
   the p99 of the refusals decided at arrival, how many came after a wait, and the refusal
   p99 of the peers that refuse, on the same arrivals and client.)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from loadtests.loadgen.stats import ratio
from loadtests.peers.tables import PEERS, Check
from loadtests.slo.tables import times

Row = Mapping[str, Any]
GATEWAY = "gateway"
REFUSAL_P99_MS = 20.0


def _ran(rows: Sequence[Row], target: str) -> list[Row]:
    return [r for r in rows if r["target"] == target and r.get("status") is None]


def _peer_of(rows: Sequence[Row], row: Row, target: str) -> Row | None:
    for r in rows:
        same = r["scenario"] == row["scenario"] and r["load"] == row["load"]
        if same and r["target"] == target and r.get("status") is None:
            return r
    return None


def _vs_direct(rows: Sequence[Row], row: Row) -> float | None:
    """Goodput over direct's on the same load (inf when direct served none in time)."""
    direct = _peer_of(rows, row, "direct")
    return ratio(row["goodput"], direct["goodput"] if direct else None)


def _where(row: Row) -> str:
    return f"{row['scenario']} {row['load']}"


def _verdict(name: str, judged: list[tuple[bool, str]]) -> Check:
    if not judged:
        return Check(name, None, "no row to judge")
    return Check(name, all(ok for ok, _ in judged), "; ".join(text for _, text in judged))


def _in_band(rows: Sequence[Row], keep: Callable[[float], bool]) -> list[Row]:
    return [r for r in _ran(rows, GATEWAY) if r["multiple"] is not None and keep(r["multiple"])]


def _at_most_1x(rows: Sequence[Row]) -> Check:
    judged = []
    for row in _in_band(rows, lambda m: m <= 1.0):
        vs, direct = _vs_direct(rows, row), _peer_of(rows, row, "direct")
        ok = (row["shed"] or 0.0) <= 0.01 and vs is not None and vs >= 0.98
        served = None if direct is None else direct["goodput"]
        late = "" if served is None else f" (direct: {1.0 - served:.1%} late)"
        judged.append((ok, f"{_where(row)}: shed {row['shed']:.1%}{late}, goodput "
                           f"{times(vs)} direct"))  # fmt: skip
    return _verdict("at <= 1x: shed <= 1% and goodput >= 0.98x direct", judged)


def _p99_within(rows: Sequence[Row]) -> Check:
    judged = []
    for row in _in_band(rows, lambda m: 2.0 <= m <= 5.0):
        p99 = row["ttft_over_objective_p99"]
        text = "-" if p99 is None else f"{p99:.2f}x"
        judged.append((p99 is not None and p99 <= 1.0,
                       f"{_where(row)}: p99 TTFT/objective {text}"))  # fmt: skip
    return _verdict("2x-5x: admitted p99 TTFT within the objective", judged)


def _twice_direct(rows: Sequence[Row]) -> Check:
    judged = []
    for row in _in_band(rows, lambda m: m == 3.0):
        vs = _vs_direct(rows, row)
        judged.append((vs is not None and vs >= 2.0,
                       f"{_where(row)}: goodput {times(vs)} direct"))  # fmt: skip
    return _verdict("at 3x: goodput >= 2x direct", judged)


def _every_peer(rows: Sequence[Row]) -> Check:
    judged = []
    for row in _in_band(rows, lambda m: 2.0 <= m <= 5.0):
        peers = [(p, r) for p in PEERS if (r := _peer_of(rows, row, p)) is not None]
        if not peers:
            continue
        ours = row["goodput"] or 0.0
        worse = [f"{p} {r['goodput']:.1%}" for p, r in peers if (r["goodput"] or 0.0) > ours]
        best = max(r["goodput"] or 0.0 for _, r in peers)
        text = f"{_where(row)}: {ours:.1%} vs best peer {best:.1%}"
        judged.append((not worse, text + (f" (below {', '.join(worse)})" if worse else "")))
    return _verdict("2x-5x: goodput >= every peer", judged)


def _cold(rows: Sequence[Row]) -> Check:
    judged = []
    for row in (r for r in _ran(rows, GATEWAY) if r["scenario"] == "cold"):
        share, timeouts = row["answered_in_time"], row["timeouts"]
        ok = share is not None and share >= 1.0 and timeouts == 0
        judged.append((ok, f"{row['load']}: {share:.1%} answered within objective + 1 s, "
                           f"{timeouts} client timeouts"))  # fmt: skip
    return _verdict("cold burst: all answered within objective + 1 s, no client timeout", judged)


def _refusals(rows: Sequence[Row]) -> Check:
    judged = []
    for row in _ran(rows, GATEWAY):
        p99 = row["refusal_p99_ms"]
        if p99 is not None:
            judged.append((p99 < REFUSAL_P99_MS, f"{_where(row)}: {p99:,.1f} ms" +
                           _refusal_context(rows, row)))  # fmt: skip
    return _verdict(f"refusal p99 < {REFUSAL_P99_MS:g} ms at the client", judged)


def _refusal_context(rows: Sequence[Row], row: Row) -> str:
    parts = []
    if (after := row.get("refusals_after_wait")) is not None:
        at_once = row.get("refusal_at_arrival_p99_ms")
        parts.append(f"{after} after a wait; at arrival "
                     + ("none" if at_once is None else f"{at_once:,.1f} ms"))  # fmt: skip
    for peer in PEERS:
        other = _peer_of(rows, row, peer)
        if other is not None and other["refusal_p99_ms"] is not None:
            parts.append(f"{peer} {other['refusal_p99_ms']:,.1f} ms")
    return f" ({'; '.join(parts)})" if parts else ""


def check_targets(rows: Sequence[Row]) -> list[Check]:
    """Every target of the module docstring, in that order."""
    return [_at_most_1x(rows), _p99_within(rows), _twice_direct(rows), _every_peer(rows),
            _cold(rows), _refusals(rows)]  # fmt: skip
