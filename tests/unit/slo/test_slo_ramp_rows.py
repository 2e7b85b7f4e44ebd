"""Ramp rows from records and what was watched: counts, TTFTs, the moments (pure)."""

from __future__ import annotations

import pytest

from loadtests.loadgen.record import RequestRecord
from loadtests.slo.ramp_rows import (
    ramp_rows,
    refusal_at,
    rise_at,
    rise_threshold_s,
    shed_by_reason,
)
from loadtests.slo.ramp_run import LevelRun, RampRun
from loadtests.slo.ramps import Level
from loadtests.slo.watch import EngineSample, StateSample, Watched


def _rec(i: int, sent: float, ttft: float | None = 0.05, status: int = 200, e2e: float = 0.2,
         error: str | None = None, queued: str | None = None) -> RequestRecord:  # fmt: skip
    headers = {} if queued is None else {"x-gateway-queue-ms": queued}
    return RequestRecord(i, "chat", "t", 0.0, sent_s=sent, ttft_s=ttft, e2e_s=e2e,
                         status=status, error=error, headers=headers)  # fmt: skip


def _refused(i: int, sent: float, queued: str = "0", e2e: float = 0.01) -> RequestRecord:
    return _rec(i, sent, None, 503, e2e, "http_503", queued)


SHED = """gateway_shed_total{cause="deadline",pool="p",priority="standard",reason="deadline_unmeetable"} 3.0
gateway_shed_total{cause="saturated",pool="p",priority="standard",reason="objective_unmeetable"} 1.0
gateway_shed_created{cause="deadline",pool="p",priority="standard",reason="deadline_unmeetable"} 9.0
"""  # noqa: E501


def test_shed_by_reason_sums_the_counter() -> None:
    assert shed_by_reason(SHED) == {"deadline_unmeetable": 3.0, "objective_unmeetable": 1.0}
    assert shed_by_reason(None) == {}


def test_the_rise_threshold_is_twice_the_first_levels_p99() -> None:
    first = [_rec(i, 0.0, ttft=0.1) for i in range(99)] + [_rec(99, 0.0, ttft=0.2)]
    assert rise_threshold_s(first) == pytest.approx(2 * 0.101)  # p99 of 99 x 0.1 and 0.2
    assert rise_threshold_s([_refused(0, 0.0)]) is None


@pytest.mark.parametrize(
    ("records", "moment"),
    [
        ([_rec(0, 1.0, ttft=0.1), _rec(1, 2.0, ttft=0.1)], None),
        ([_rec(0, 1.0, ttft=0.5), _rec(1, 0.8, ttft=0.9)], 1.1),  # the earliest: 0.8 + 0.3
        ([_rec(0, 1.0, None, error="timeout", status=200)], 1.3),  # never came: a rise too
        ([_refused(0, 1.0, "900", e2e=0.9)], None),  # a refusal is not a rise
    ],
)
def test_rise_at_a_request_without_its_first_token(records, moment) -> None:  # type: ignore[no-untyped-def]
    found = rise_at(records, 0.3)
    assert found == (None if moment is None else pytest.approx(moment))
    assert rise_at(records, None) is None


def test_refusal_at_is_when_the_first_reached_its_client() -> None:
    assert refusal_at([_rec(0, 0.0), _refused(1, 2.0, e2e=0.5), _refused(2, 2.2)]) == 2.21
    assert refusal_at([_rec(0, 0.0)]) is None


def _run() -> RampRun:
    low = LevelRun(Level(4, ()), [_rec(i, 0.1 * i, ttft=0.05) for i in range(10)], 0.0, 1.0,
                   "")  # fmt: skip
    high = LevelRun(
        Level(16, ()),
        [_rec(10, 1.1, ttft=0.05), _rec(11, 1.2, ttft=0.4), _refused(12, 1.5, "0"),
         _refused(13, 1.6, "300", e2e=0.3), _rec(14, 1.7, None, None, 30.0, "timeout")],
        1.0, 2.5, SHED,
    )  # fmt: skip
    watched = Watched(
        engine=[EngineSample(0.5, 0, 4), EngineSample(1.15, 2, 8), EngineSample(1.4, 6, 8)],
        gateway=[StateSample(0.5, {"p": "nominal"}), StateSample(1.55, {"p": "saturated"})],
    )
    return RampRun([low, high], watched)


def test_ramp_rows_one_per_level_with_its_moments() -> None:
    low, high = ramp_rows("ramp8", "gateway", _run())
    assert (low["scenario"], low["target"], low["load"], low["concurrency"]) == (
        "ramp8", "gateway", "c=4", 4)  # fmt: skip
    assert (low["sent"], low["served"], low["refused"], low["rps"]) == (10, 10, 0, 10.0)
    assert low["ttft_p99_ms"] == pytest.approx(50.0)
    assert low["rise_threshold_ms"] == pytest.approx(100.0)
    assert (low["waiting_at"], low["rise_at"], low["refusal_at"], low["saturated_at"]) == (
        None, None, None, None)  # fmt: skip
    assert low["engine_waiting_peak"] == 0
    assert (high["served"], high["refused"], high["timeouts"]) == (2, 2, 1)
    assert (high["refused_at_arrival"], high["refused_after_wait"]) == (1, 1)
    assert high["waiting_at"] == 1.15
    assert high["rise_at"] == pytest.approx(1.3)  # sent 1.2, 0.4 s > 0.1 s threshold
    assert high["refusal_at"] == pytest.approx(1.51)
    assert high["saturated_at"] == 1.55
    assert high["engine_waiting_peak"] == 6
    assert high["shed_reasons"] == {"deadline_unmeetable": 3, "objective_unmeetable": 1}
    assert ramp_rows("ramp", "direct", RampRun([], Watched())) == []
