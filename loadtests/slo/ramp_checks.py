"""Issue 31's targets of the new rows: the ramps and the gateway replicas (pure).

1. Ramp onto an engine with room (``ramp``: 256 slots, fast): at every level (4, 64, 200
   closed-loop users) the gateway refuses nothing and its TTFT p99 is within 2x direct's at
   the same level.
2. Ramp onto an engine with 8 slots (``ramp8``): the gateway's first refusal reaches its
   client no earlier than the first evidence of a queue: the engine's ``/metrics`` showing a
   request waiting, or the TTFTs rising (``loadtests.slo.ramp_rows``).
3. Prompts turn short (``shift``: an engine held to 2 running by 6,000-token prefills, then
   64 users of 100-token prompts): once they are short (the levels of the shape's own
   prompts) the gateway refuses nothing and its TTFT p99 is within 2x direct's there. A
   batch size learned from long prompts is no cap on short ones.
4. Two gateway processes in front of one fleet (``replicas``: bursty 3x, each process half of
   the arrivals): admitted p99 TTFT within 1.25x one gateway's on the same arrivals and
   within 1.1x the objective; goodput at least 0.9x one gateway's. The same with the
   policy's cluster section on (``gateway-x2-cluster``), judged apart, when it ran.

Rows: ``loadtests.slo.ramp_rows`` (ramps) and ``loadtests.slo.rows`` (replicas), with
``scenario``, ``load``, ``target``, ``status``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from loadtests.loadgen.stats import ratio
from loadtests.peers.tables import Check
from loadtests.slo.checks import GATEWAY, peer_of, ran, verdict
from loadtests.slo.ramps import RAMP_P99_FACTOR
from loadtests.slo.tables import times

Row = Mapping[str, Any]
REPLICAS_P99_FACTOR = 1.25
REPLICAS_OBJECTIVE_FACTOR = 1.1
REPLICAS_GOODPUT_FACTOR = 0.9


def _of(rows: Sequence[Row], scenario: str, target: str) -> list[Row]:
    return [r for r in ran(rows, target) if r["scenario"] == scenario]


def _near_direct(rows: Sequence[Row], scenario: str) -> list[tuple[bool, str]]:
    """Each gateway level of ``scenario`` of the shape's own prompts (a level of other
    prompts, a shift's long one, left out): 0 refused and TTFT p99 within
    ``RAMP_P99_FACTOR`` x direct's at the same level."""
    judged = []
    for row in _of(rows, scenario, GATEWAY):
        if row.get("prompt_tokens") is not None:
            continue
        direct = peer_of(rows, row, "direct")
        ours, theirs = row["ttft_p99_ms"], None if direct is None else direct["ttft_p99_ms"]
        vs = ratio(ours, theirs)
        ok = row["refused"] == 0 and vs is not None and vs <= RAMP_P99_FACTOR
        judged.append((ok, f"{row['load']}: {row['refused']} refused, p99 TTFT "
                           f"{ours or 0:,.0f} ms = {times(vs)} direct's"))  # fmt: skip
    return judged


def _ramp(rows: Sequence[Row]) -> Check:
    return verdict(f"ramp, 256 slots: 0 refused, TTFT p99 <= {RAMP_P99_FACTOR:g}x direct's "
                   "at each level", _near_direct(rows, "ramp"))  # fmt: skip


def _shift(rows: Sequence[Row]) -> Check:
    return verdict(f"shift, long prompts then short: once short, 0 refused and TTFT p99 <= "
                   f"{RAMP_P99_FACTOR:g}x direct's", _near_direct(rows, "shift"))  # fmt: skip


def _first(rows: Sequence[Row], key: str) -> tuple[float, str] | None:
    found = [(r[key], str(r["load"])) for r in rows if r.get(key) is not None]
    return min(found) if found else None


def _at(moment: tuple[float, str] | None) -> str:
    return "none" if moment is None else f"{moment[0]:.2f} s ({moment[1]})"


def evidence_before_refusal(rows: Sequence[Row]) -> tuple[bool, str] | None:
    """Whether one target's ramp refused only after the engine reported waiting or the
    TTFTs rose, and the moments (``None``: no ramp rows)."""
    if not rows:
        return None
    waiting, rise = _first(rows, "waiting_at"), _first(rows, "rise_at")
    refusal, saturated = _first(rows, "refusal_at"), _first(rows, "saturated_at")
    evidence = min((m for m in (waiting, rise) if m is not None), default=None)
    ok = refusal is None or (evidence is not None and refusal[0] >= evidence[0])
    text = (f"engine waiting first {_at(waiting)}, TTFT rise {_at(rise)}, first refusal "
            f"{_at(refusal)}, pool saturated {_at(saturated)}")  # fmt: skip
    return ok, text


def _ramp8(rows: Sequence[Row]) -> Check:
    judged = evidence_before_refusal(_of(rows, "ramp8", GATEWAY))
    return verdict("ramp onto 8 slots: refusals only once the engine reports waiting or "
                   "TTFT rises", [] if judged is None else [judged])  # fmt: skip


def _replicas(rows: Sequence[Row], target: str) -> Check:
    name = (f"{target}, bursty 3x: p99 TTFT <= {REPLICAS_P99_FACTOR:g}x one gateway's and "
            f"<= {REPLICAS_OBJECTIVE_FACTOR:g}x objective, goodput >= "
            f"{REPLICAS_GOODPUT_FACTOR:g}x one gateway's")  # fmt: skip
    judged = []
    for row in _of(rows, "replicas", target):
        one = peer_of(rows, row, GATEWAY)
        if one is None:
            continue
        p99 = ratio(row["ttft_p99_ms"], one["ttft_p99_ms"])
        good = ratio(row["goodput"], one["goodput"])
        objective = row["ttft_over_objective_p99"]
        ok = (p99 is not None and p99 <= REPLICAS_P99_FACTOR and objective is not None
              and objective <= REPLICAS_OBJECTIVE_FACTOR and good is not None
              and good >= REPLICAS_GOODPUT_FACTOR)  # fmt: skip
        judged.append((ok, f"{row['load']}: p99 TTFT {row['ttft_p99_ms'] or 0:,.0f} ms vs one "
                           f"{one['ttft_p99_ms'] or 0:,.0f} ms ({times(p99)}), p99 / objective "
                           f"{objective or 0:.2f}, goodput {row['goodput']:.1%} vs "
                           f"{one['goodput']:.1%} ({times(good)})"))  # fmt: skip
    return verdict(name, judged)


def check_new_rows(rows: Sequence[Row]) -> list[Check]:
    """The targets of the module docstring; the cluster variant only when it ran."""
    checks = [_ramp(rows), _ramp8(rows), _shift(rows), _replicas(rows, "gateway-x2")]
    if _of(rows, "replicas", "gateway-x2-cluster"):
        checks.append(_replicas(rows, "gateway-x2-cluster"))
    return checks
