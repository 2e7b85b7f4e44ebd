"""Issue 31's restated targets for the gateway under its DEFAULT policy, checked against the
rows of the open-loop scenarios (the ramps and the replicas row: ``ramp_checks``).

Each check says met (True), missed (False) or not measured (None: no row to judge), with the
measured figures. Rows are ``loadtests.slo.rows`` figures plus ``scenario``, ``load``,
``multiple``, ``target`` and ``status`` (``None`` when the target ran); every comparison is
with another target on the same arrivals in the same run.

1. At 1x or less (bursty 0.5x and 1x, Azure conv and code 1x): at most 1% refused, goodput
   at least 0.98x direct's, admitted p99 TTFT at most direct's.
2. From 2x to 5x: goodput at least every peer's, on every row.
3. At 3x: goodput at least 2x direct's.
4. From 2x to 5x: admitted p99 TTFT within the deadline on every row (the p99 of each served
   request's TTFT over its deadline, 3x its objective, at most 1).
5. Bursty rows from 2x to 5x: admitted p99 TTFT within 1.1x the objective.
6. Cold burst: every request answered (served or refused) within its objective + 1 s, and
   no client timeout.
7. Refusals decided at arrival: their p95 at the client within 1.5x (+ 50 ms) of the
   refuse-everything server's (``refuse-all``) on the same arrivals, in every row with both.
8. Refusals after a wait: each answered by its deadline (send to answer at the client, 3x
   its objective).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from loadtests.loadgen.stats import ratio
from loadtests.peers.tables import PEERS, Check
from loadtests.slo.refuser import NAME as REFUSER
from loadtests.slo.tables import times

Row = Mapping[str, Any]
GATEWAY = "gateway"
OPEN_LOOP_OUT = frozenset({"ramp", "ramp8", "shift", "replicas"})  # judged by ramp_checks
BURSTY_OBJECTIVE_FACTOR = 1.1
REFUSAL_FACTOR, REFUSAL_SLACK_MS = 1.5, 50.0


def ran(rows: Sequence[Row], target: str) -> list[Row]:
    return [r for r in rows if r["target"] == target and r.get("status") is None]


def peer_of(rows: Sequence[Row], row: Row, target: str) -> Row | None:
    for r in rows:
        same = r["scenario"] == row["scenario"] and r["load"] == row["load"]
        if same and r["target"] == target and r.get("status") is None:
            return r
    return None


def _vs_direct(rows: Sequence[Row], row: Row) -> float | None:
    """Goodput over direct's on the same load (inf when direct served none in time)."""
    direct = peer_of(rows, row, "direct")
    return ratio(row["goodput"], direct["goodput"] if direct else None)


def where(row: Row) -> str:
    return f"{row['scenario']} {row['load']}"


def verdict(name: str, judged: list[tuple[bool, str]]) -> Check:
    if not judged:
        return Check(name, None, "no row to judge")
    return Check(name, all(ok for ok, _ in judged), "; ".join(text for _, text in judged))


def _open(rows: Sequence[Row]) -> list[Row]:
    return [r for r in ran(rows, GATEWAY) if r["scenario"] not in OPEN_LOOP_OUT]


def _in_band(rows: Sequence[Row], keep: Callable[[float], bool]) -> list[Row]:
    return [r for r in _open(rows) if r.get("multiple") is not None and keep(r["multiple"])]


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f} ms"


def _at_most_1x(rows: Sequence[Row]) -> Check:
    judged = []
    for row in _in_band(rows, lambda m: m <= 1.0):
        direct = peer_of(rows, row, "direct")
        vs = _vs_direct(rows, row)
        ours, theirs = row["ttft_p99_ms"], None if direct is None else direct["ttft_p99_ms"]
        fast = ours is not None and theirs is not None and ours <= theirs
        ok = (row["shed"] or 0.0) <= 0.01 and vs is not None and vs >= 0.98 and fast
        late = "" if direct is None else f" (direct: {1.0 - direct['goodput']:.1%} late)"
        judged.append((ok, f"{where(row)}: refused {row['shed']:.1%}{late}, goodput "
                           f"{times(vs)} direct, p99 TTFT {_ms(ours)} vs direct "
                           f"{_ms(theirs)}"))  # fmt: skip
    return verdict("at <= 1x: <= 1% refused, goodput >= 0.98x direct, admitted p99 TTFT "
                   "<= direct's", judged)  # fmt: skip


def _every_peer(rows: Sequence[Row]) -> Check:
    judged = []
    for row in _in_band(rows, lambda m: 2.0 <= m <= 5.0):
        peers = [(p, r) for p in PEERS if (r := peer_of(rows, row, p)) is not None]
        if not peers:
            continue
        ours = row["goodput"] or 0.0
        worse = [f"{p} {r['goodput']:.1%}" for p, r in peers if (r["goodput"] or 0.0) > ours]
        best = max(r["goodput"] or 0.0 for _, r in peers)
        text = f"{where(row)}: {ours:.1%} vs best peer {best:.1%}"
        judged.append((not worse, text + (f" (below {', '.join(worse)})" if worse else "")))
    return verdict("2x-5x: goodput >= every peer's", judged)


def _twice_direct(rows: Sequence[Row]) -> Check:
    judged = []
    for row in _in_band(rows, lambda m: m == 3.0):
        vs = _vs_direct(rows, row)
        judged.append((vs is not None and vs >= 2.0,
                       f"{where(row)}: goodput {times(vs)} direct"))  # fmt: skip
    return verdict("at 3x: goodput >= 2x direct's", judged)


def _ratio_within(rows: Sequence[Row], key: str, limit: float, bursty: bool) -> list[Any]:
    judged = []
    for row in _in_band(rows, lambda m: 2.0 <= m <= 5.0):
        if bursty and row["scenario"] != "bursty":
            continue
        value = row.get(key)
        text = "-" if value is None else f"{value:.2f}"
        judged.append((value is not None and value <= limit, f"{where(row)}: {text}"))
    return judged


def _within_deadline(rows: Sequence[Row]) -> Check:
    return verdict("2x-5x: admitted p99 TTFT within the deadline (p99 TTFT / deadline <= 1)",
                   _ratio_within(rows, "ttft_over_deadline_p99", 1.0, False))  # fmt: skip


def _bursty_objective(rows: Sequence[Row]) -> Check:
    limit = BURSTY_OBJECTIVE_FACTOR
    return verdict(f"bursty 2x-5x: admitted p99 TTFT within {limit:g}x the objective",
                   _ratio_within(rows, "ttft_over_objective_p99", limit, True))  # fmt: skip


def _cold(rows: Sequence[Row]) -> Check:
    judged = []
    for row in (r for r in _open(rows) if r["scenario"] == "cold"):
        share, timeouts = row["answered_in_time"], row["timeouts"]
        ok = share is not None and share >= 1.0 and timeouts == 0
        judged.append((ok, f"{row['load']}: {share:.1%} answered within objective + 1 s, "
                           f"{timeouts} client timeouts"))  # fmt: skip
    return verdict("cold burst: all answered within objective + 1 s, no client timeout", judged)


def refusal_limit_ms(floor_ms: float) -> float:
    """The most a refusal at arrival may take at the client: 1.5x the floor + 50 ms."""
    return REFUSAL_FACTOR * floor_ms + REFUSAL_SLACK_MS


def _at_arrival(rows: Sequence[Row]) -> Check:
    judged = []
    for row in _open(rows):
        ours = row.get("refusal_at_arrival_p95_ms")
        floor = peer_of(rows, row, REFUSER)
        base = None if floor is None else floor.get("refusal_p95_ms")
        if ours is None or base is None:
            continue
        limit = refusal_limit_ms(base)
        judged.append((ours <= limit, f"{where(row)}: p95 {ours:,.1f} ms vs {REFUSER} "
                                      f"{base:,.1f} ms (limit {limit:,.1f} ms)"))  # fmt: skip
    return verdict(f"refusals at arrival: client p95 <= {REFUSAL_FACTOR:g}x {REFUSER}'s "
                   f"+ {REFUSAL_SLACK_MS:g} ms", judged)  # fmt: skip


def _after_wait(rows: Sequence[Row]) -> Check:
    judged = []
    for row in _open(rows):
        after, late = row.get("refusals_after_wait"), row.get("refusals_after_wait_late")
        if not after or late is None:
            continue
        worst = row.get("refusal_after_wait_worst")
        judged.append((late == 0, f"{where(row)}: {late} of {after} past the deadline "
                                  f"(worst {worst:.2f}x it)"))  # fmt: skip
    return verdict("refusals after a wait: each answered by its deadline", judged)


def check_targets(rows: Sequence[Row]) -> list[Check]:
    """Every target of the module docstring, in that order."""
    return [_at_most_1x(rows), _every_peer(rows), _twice_direct(rows), _within_deadline(rows),
            _bursty_objective(rows), _cold(rows), _at_arrival(rows), _after_wait(rows)]  # fmt: skip
