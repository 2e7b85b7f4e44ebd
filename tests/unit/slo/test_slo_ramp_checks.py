"""The new rows' targets: the ramps and the gateway replicas (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from loadtests.slo.ramp_checks import check_new_rows, evidence_before_refusal
from loadtests.slo.ramp_tables import ramp_table
from loadtests.slo.report import Section, render


def _level(scenario: str, load: str, target: str, **figures: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "scenario": scenario, "load": load, "multiple": None, "target": target, "status": None,
        "concurrency": int(load.split(",")[0][2:]), "start_s": 0.0, "end_s": 1.0, "sent": 100,
        "served": 100,
        "refused": 0, "refused_at_arrival": 0, "refused_after_wait": 0, "timeouts": 0,
        "errors": {}, "ttft_p50_ms": 20.0, "ttft_p99_ms": 100.0, "rps": 50.0,
        "engine_waiting_peak": 0, "waiting_at": None, "rise_threshold_ms": 80.0,
        "rise_at": None, "refusal_at": None, "saturated_at": None, "shed_reasons": {},
    }  # fmt: skip
    return {**row, **figures}


def _ramp(**gateway: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for load in ("c=4", "c=64", "c=200"):
        rows.append(_level("ramp", load, "direct"))
        rows.append(_level("ramp", load, "gateway", **gateway.get(load, {})))
    return rows


def _open(target: str, **figures: Any) -> dict[str, Any]:
    row = {"scenario": "replicas", "load": "3x", "multiple": 3.0, "target": target,
           "status": None, "goodput": 0.5, "ttft_p99_ms": 2000.0,
           "ttft_over_objective_p99": 1.0}  # fmt: skip
    return {**row, **figures}


def _met(rows: list[dict[str, Any]]) -> list[bool | None]:
    return [c.met for c in check_new_rows(rows)]


@pytest.mark.parametrize(
    ("gateway", "met"),
    [
        ({}, True),
        ({"c=64": {"ttft_p99_ms": 200.0}}, True),  # 2x direct's: within
        ({"c=64": {"ttft_p99_ms": 201.0}}, False),
        ({"c=200": {"refused": 1}}, False),
        ({"c=200": {"ttft_p99_ms": None, "served": 0}}, False),
    ],
)
def test_ramp_no_refusal_and_p99_within_twice_direct(gateway: dict[str, Any], met: bool) -> None:
    assert _met(_ramp(**gateway))[0] is met


def test_ramp_detail_names_every_level() -> None:
    detail = check_new_rows(_ramp(**{"c=64": {"ttft_p99_ms": 250.0, "refused": 3}}))[0].detail
    assert "c=4: 0 refused, p99 TTFT 100 ms = 1.00x direct's" in detail
    assert "c=64: 3 refused, p99 TTFT 250 ms = 2.50x direct's" in detail


@pytest.mark.parametrize(
    ("levels", "met"),
    [
        ([{}, {}, {}], True),  # no refusal at all
        ([{}, {"waiting_at": 5.0}, {"refusal_at": 9.0}], True),
        ([{}, {"rise_at": 5.0, "refusal_at": 5.0}, {}], True),  # at the moment itself
        ([{}, {"waiting_at": 6.0, "rise_at": 4.0, "refusal_at": 5.0}, {}], True),  # either
        ([{}, {"refusal_at": 5.0, "waiting_at": 5.5, "rise_at": 7.0}, {}], False),
        ([{"refusal_at": 0.5}, {}, {}], False),  # no evidence at all
    ],
)
def test_ramp8_refusals_only_after_evidence(levels: list[dict[str, Any]], met: bool) -> None:
    rows = [_level("ramp8", f"c={c}", "gateway", **f)
            for c, f in zip((4, 16, 64), levels, strict=True)]  # fmt: skip
    assert _met(rows)[1] is met
    judged = evidence_before_refusal(rows)
    assert judged is not None
    assert judged[0] is met


def test_ramp8_moments_are_said() -> None:
    rows = [_level("ramp8", "c=4", "gateway"),
            _level("ramp8", "c=16", "gateway", waiting_at=5.25, saturated_at=7.0),
            _level("ramp8", "c=64", "gateway", rise_at=12.0, refusal_at=12.5)]  # fmt: skip
    assert check_new_rows(rows)[1].detail == (
        "engine waiting first 5.25 s (c=16), TTFT rise 12.00 s (c=64), first refusal "
        "12.50 s (c=64), pool saturated 7.00 s (c=16)"
    )
    assert evidence_before_refusal([]) is None


@pytest.mark.parametrize(
    ("two", "met"),
    [
        ({}, True),
        ({"ttft_p99_ms": 2500.0}, True),  # 1.25x
        ({"ttft_p99_ms": 2520.0}, False),
        ({"ttft_over_objective_p99": 1.12}, False),
        ({"goodput": 0.45}, True),  # 0.9x
        ({"goodput": 0.44}, False),
    ],
)
def test_two_gateways_against_one(two: dict[str, Any], met: bool) -> None:
    rows = [_open("gateway"), _open("gateway-x2", **two)]
    assert _met(rows) == [None, None, None, met]


def test_the_cluster_variant_is_judged_apart_when_it_ran() -> None:
    rows = [_open("gateway"), _open("gateway-x2"),
            _open("gateway-x2-cluster", goodput=0.2)]  # fmt: skip
    checks = check_new_rows(rows)
    assert [c.met for c in checks] == [None, None, None, True, False]
    assert checks[4].name.startswith("gateway-x2-cluster, bursty 3x")
    assert "goodput 20.0% vs 50.0% (0.40x)" in checks[4].detail


LONG = "c=16, 6000-token prompts"


def _shift(long: dict[str, Any], short: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for load, tokens, figures in ((LONG, 6000, long), ("c=64", None, short)):
        rows.append(_level("shift", load, "direct", prompt_tokens=tokens))
        rows.append(_level("shift", load, "gateway", prompt_tokens=tokens, **figures))
    return rows


@pytest.mark.parametrize(
    ("long", "short", "met"),
    [
        ({}, {}, True),
        ({"refused": 26, "ttft_p99_ms": 900.0}, {}, True),  # the long level is not judged
        ({}, {"ttft_p99_ms": 200.0}, True),  # 2x direct's: within
        ({}, {"ttft_p99_ms": 201.0}, False),
        ({}, {"refused": 1}, False),
        ({}, {"ttft_p99_ms": None, "served": 0}, False),
    ],
)
def test_shift_judges_the_short_prompts_after_the_long(
    long: dict[str, Any], short: dict[str, Any], met: bool
) -> None:
    check = check_new_rows(_shift(long, short))[2]
    assert check.met is met
    assert check.detail.startswith("c=64: ")  # the long level left out


def test_ramp_table_level_by_level() -> None:
    rows = [_level("ramp", "c=4", "direct"), _level("ramp", "c=64", "direct"),
            _level("ramp", "c=4", "gateway", ttft_p99_ms=150.0),
            _level("ramp", "c=64", "gateway", refused=3, refused_at_arrival=2,
                   refused_after_wait=1, shed_reasons={"deadline_unmeetable": 3},
                   waiting_at=1.5, rise_at=1.25, refusal_at=1.75),
            {**_level("ramp", "c=4", "litellm"), "status": "did not start: x"}]  # fmt: skip
    lines = ramp_table(rows).splitlines()
    assert [line.split(" | ")[:2] for line in lines[2:]] == [
        ["| c=4", "direct"], ["| c=4", "gateway"], ["| c=4", "litellm"],
        ["| c=64", "direct"], ["| c=64", "gateway"]]  # fmt: skip
    assert all(line.count("|") == lines[0].count("|") for line in lines)
    assert "| c=4 | gateway | 100 | 100 | 0: 0 / 0 | - | 0 | - | 20 / 150 | 1.50x |" in lines[3]
    assert ("| 3: 2 / 1 | 3 deadline_unmeetable | 0 | - | 20 / 100 | 1.00x | 50.0 | 0 | 1.50 "
            "| 1.25 (80) | 1.75 | - |") in lines[6]  # fmt: skip


def test_render_shows_a_ramp_section_with_its_table() -> None:
    sections = [Section("ramp", "Ramp", ["levels"], _ramp(), kind="ramp")]
    text = render(sections, {}, {})
    assert "| level | target |" in text
    assert "Ramp columns:" in text
    assert "| ramp, 256 slots: 0 refused, TTFT p99 <= 2x direct's at each level | met |" in text
