"""Issue 32's targets, met, missed or not measured, from the benchmark's rows."""

from __future__ import annotations

from typing import Any

import pytest

from loadtests.tail_faults.checks import (
    all_checks,
    baseline_checks,
    death_checks,
    saturation_checks,
    stall_checks,
)


def _row(**figures: Any) -> dict[str, Any]:
    return {"status": None, "requests": 100, "intact": 100, "intact_share": 1.0,
            "looks_complete_not": 0, "extra_share": 0.0, "ttft_p99_ms": 50.0,
            "goodput": 0.5, "shed": 0.4, **figures}  # fmt: skip


@pytest.mark.parametrize(
    ("p99", "extra", "verdicts"),
    [
        (175.0, 0.08, [True, True]),  # 1.5 x 50 + 100 = 175: at the limit
        (176.0, 0.0, [False, True]),
        (60.0, 0.09, [True, False]),
    ],
)
def test_stalls(p99: float, extra: float, verdicts: list[bool]) -> None:
    rows = {"nofault": {"gateway": _row()},
            "stalls": {"gateway": _row(ttft_p99_ms=p99, extra_share=extra)}}  # fmt: skip
    assert [c.met for c in stall_checks(rows)] == verdicts


def test_stalls_without_a_baseline_are_not_measured() -> None:
    rows = {"stalls": {"gateway": _row(ttft_p99_ms=60.0)}}
    assert [c.verdict() for c in stall_checks(rows)] == ["not measured", "met"]


@pytest.mark.parametrize(
    ("intact", "fake", "verdicts"),
    [(97, 0, [True, True]), (96, 0, [False, True]), (100, 1, [True, False])],
)
def test_deaths(intact: int, fake: int, verdicts: list[bool]) -> None:
    row = _row(intact=intact, intact_share=intact / 100, looks_complete_not=fake)
    assert [c.met for c in death_checks({"deaths": {"gateway": row}})] == verdicts


@pytest.mark.parametrize(
    ("on", "off", "verdicts"),
    [
        (_row(extra_share=0.01), _row(extra_share=0.0), [True, True]),
        (_row(extra_share=0.02), _row(extra_share=0.0), [False, True]),
        (_row(goodput=0.44), _row(goodput=0.5), [True, False]),
        (_row(shed=0.46), _row(shed=0.4), [True, False]),
    ],
)
def test_saturation(on: dict[str, Any], off: dict[str, Any], verdicts: list[bool]) -> None:
    rows = {"saturation": {"gateway": on, "gateway-off": off}}
    assert [c.met for c in saturation_checks(rows)] == verdicts


def test_a_target_that_did_not_run_is_not_measured() -> None:
    refused = {"status": "policy refused by this gateway (not run): ..."}
    rows = {"saturation": {"gateway": _row(), "gateway-off": refused}}
    assert [c.verdict() for c in saturation_checks(rows)] == ["not measured"] * 2
    assert [c.verdict() for c in death_checks({"deaths": {"gateway": refused}})] == [
        "not measured"] * 2  # fmt: skip


def test_baseline_and_all() -> None:
    rows = {"nofault": {"direct": _row(), "gateway": _row(intact=99),
                        "nginx": {"status": "did not start"}}}  # fmt: skip
    verdicts = [(c.name, c.met) for c in baseline_checks(rows)]
    assert verdicts == [("no faults: direct streams intact", True),
                        ("no faults: gateway streams intact", False)]  # fmt: skip
    assert len(all_checks({**rows, "deaths": {}})) == 4
