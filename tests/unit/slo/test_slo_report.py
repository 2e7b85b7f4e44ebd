"""The issue's targets judged from rows, and the Markdown tables (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from loadtests.slo.checks import check_targets
from loadtests.slo.report import Section, render
from loadtests.slo.tables import scenario_table, verdicts_table


def _row(scenario: str, load: str, multiple: float | None, target: str,
         **figures: Any) -> dict[str, Any]:  # fmt: skip
    row: dict[str, Any] = {
        "scenario": scenario, "load": load, "multiple": multiple, "target": target,
        "status": None, "sent": 100, "served": 90, "good": 80, "goodput": 0.8,
        "good_rps": 1.0, "ttft_p50_ms": 400.0, "ttft_p99_ms": 1900.0,
        "ttft_over_objective_p99": 0.95, "ttft_over_deadline_p99": 0.32, "shed": 0.0,
        "shed_beyond_excess": 0.0, "timeouts": 0, "errors": {}, "refusal_p95_ms": None,
        "refusal_p99_ms": None, "answered_in_time": 1.0, "retry": None,
        "predictor_error_p50_ms": None, "predictor_error_p90_ms": None,
    }  # fmt: skip
    return {**row, **figures}


def _rows(**gateway: Any) -> list[dict[str, Any]]:
    """Direct, the gateway and two peers at 1x and 3x, a cold burst; refuse-all at 3x and
    at the cold burst."""
    rows = []
    for load, m, direct_good in (("1x", 1.0, 0.9), ("3x", 3.0, 0.3)):
        rows.append(_row("bursty", load, m, "direct", goodput=direct_good))
        figures = {"goodput": 0.9 if m == 1.0 else 0.62, **gateway.get(load, {})}
        rows.append(_row("bursty", load, m, "gateway", **figures))
        rows.append(_row("bursty", load, m, "nginx", goodput=0.5 if m == 3.0 else 0.9))
        rows.append(_row("bursty", load, m, "litellm", status="did not start: missing"))
    rows.append(_row("bursty", "3x", 3.0, "refuse-all", goodput=0.0, refusal_p95_ms=20.0))
    rows.append(_row("cold", "300 at once", None, "gateway", **gateway.get("cold", {})))
    rows.append(_row("cold", "300 at once", None, "refuse-all", refusal_p95_ms=400.0))
    return rows


def _met(rows: list[dict[str, Any]]) -> list[bool | None]:
    return [c.met for c in check_targets(rows)]


ALL = [True] * 6  # the first six; refusals (the last two) are judged only when there are some
AT_ARRIVAL = {"refusal_at_arrival_p95_ms": 75.0, "refusals_after_wait": 0,
              "refusals_after_wait_late": 0}  # fmt: skip


@pytest.mark.parametrize(
    ("gateway", "met"),
    [
        ({}, [*ALL, None, None]),  # no refusals: those targets unmeasured
        ({"1x": {"shed": 0.02}}, [False, *ALL[1:], None, None]),
        ({"1x": {"goodput": 0.87}}, [False, *ALL[1:], None, None]),  # 0.967x direct
        ({"1x": {"ttft_p99_ms": 1901.0}}, [False, *ALL[1:], None, None]),  # slower than direct
        ({"3x": {"goodput": 0.45}}, [True, False, False, True, True, True, None, None]),
        ({"3x": {"goodput": 0.59}}, [True, True, False, True, True, True, None, None]),
        ({"3x": {"ttft_over_deadline_p99": 1.02}}, [*ALL[:3], False, *ALL[4:], None, None]),
        ({"3x": {"ttft_over_objective_p99": 1.12}}, [*ALL[:4], False, True, None, None]),
        ({"3x": {"ttft_over_objective_p99": 1.09}}, [*ALL, None, None]),  # within 1.1x
        ({"cold": {"timeouts": 1}}, [True, True, True, True, True, False, None, None]),
        ({"cold": {"answered_in_time": 0.99}}, [True, True, True, True, True, False, None, None]),
        ({"3x": AT_ARRIVAL}, [*ALL, True, None]),  # 75 <= 1.5 x 20 + 50 = 80
        ({"3x": {**AT_ARRIVAL, "refusal_at_arrival_p95_ms": 81.0}}, [*ALL, False, None]),
        ({"cold": {**AT_ARRIVAL, "refusal_at_arrival_p95_ms": 640.0}}, [*ALL, True, None]),
        ({"cold": {**AT_ARRIVAL, "refusal_at_arrival_p95_ms": 660.0}}, [*ALL, False, None]),
        ({"3x": {**AT_ARRIVAL, "refusals_after_wait": 4, "refusal_after_wait_worst": 0.4}},
         [*ALL, True, True]),
        ({"3x": {**AT_ARRIVAL, "refusals_after_wait": 4, "refusals_after_wait_late": 1,
                 "refusal_after_wait_worst": 1.3}}, [*ALL, True, False]),
    ],
)  # fmt: skip
def test_check_targets(gateway: dict[str, dict[str, Any]], met: list[bool | None]) -> None:
    assert _met(_rows(**gateway)) == met


def test_checks_without_rows_are_not_measured_and_say_the_figures() -> None:
    assert _met([]) == [None] * 8
    checks = check_targets(_rows(**{"3x": {"goodput": 0.45}}))
    assert "bursty 3x: goodput 1.50x direct" in checks[2].detail
    assert "45.0% vs best peer 50.0% (below nginx 50.0%)" in checks[1].detail
    table = verdicts_table(checks)
    assert "| at 3x: goodput >= 2x direct's | not met |" in table
    assert "| refusals after a wait: each answered by its deadline | not measured | no row to " in (
        table
    )


def test_checks_show_what_the_targets_are_up_against() -> None:
    rows = _rows(**{"1x": {"shed": 0.05}, "3x": {**AT_ARRIVAL, "refusals_after_wait": 4,
                                                 "refusals_after_wait_late": 1,
                                                 "refusal_after_wait_worst": 1.25}})  # fmt: skip
    checks = check_targets(rows)
    assert ("bursty 1x: refused 5.0% (direct: 10.0% late), goodput 1.00x direct, p99 TTFT "
            "1,900 ms vs direct 1,900 ms") in checks[0].detail  # fmt: skip
    assert "bursty 3x: p95 75.0 ms vs refuse-all 20.0 ms (limit 80.0 ms)" in checks[6].detail
    assert "bursty 3x: 1 of 4 past the deadline (worst 1.25x it)" in checks[7].detail
    assert "bursty 3x: 0.32" in checks[3].detail


def test_the_new_rows_are_not_judged_as_open_loop_rows() -> None:
    rows = [*_rows(), _row("replicas", "3x", 3.0, "gateway", ttft_over_deadline_p99=2.0),
            _row("replicas", "3x", 3.0, "direct")]  # fmt: skip
    assert _met(rows) == [*ALL, None, None]


def test_scenario_table_cells() -> None:
    rows = _rows(**{"3x": {"shed": 0.7, "shed_beyond_excess": 0.0333, "refusal_p99_ms": 4.25,
                           "refusal_p95_ms": 3.5, "refusal_at_arrival_p95_ms": 3.25,
                           "refusals_after_wait": 2, "refusals_after_wait_late": 1,
                           "retry": {"advised": 8, "retried": 6, "admitted": 3},
                           "predictor_error_p50_ms": 120.0, "predictor_error_p90_ms": 480.0,
                           "errors": {"http_500": 2}}})  # fmt: skip
    lines = scenario_table([r for r in rows if r["scenario"] == "bursty"]).splitlines()
    assert len(lines) == 2 + 9
    assert all(line.count("|") == lines[0].count("|") for line in lines)
    gateway_3x = lines[7]
    assert gateway_3x.startswith(
        "| 3x | gateway | 100 | 62.0% | 2.07x | 400 / 1,900 | 0.95 | 0.32 |"
    )
    assert ("| 70.0% | +3.3% | 0 | 2 http_500 | 3.5 / 4.2 | 3.2 | 2 (1) | 100.0% | 37.5% (3/8) "
            "| 120 / 480 |") in gateway_3x  # fmt: skip
    assert "| 1x | gateway | 100 | 90.0% | 1.00x |" in lines[3]
    assert lines[3].endswith("| - | - | 100.0% | - | n/a |")  # the gateway without histogram
    assert lines[4].endswith("| - | - |")  # a peer: no predictor
    assert "| 1x | litellm | did not start: missing | - |" in lines[5]
    assert "| 3x | refuse-all | 100 | 0.0% | 0.00x |" in lines[10]


def test_retry_column_without_advice() -> None:
    row = _row("steady", "2x", 2.0, "nginx", retry={"advised": 0, "retried": 0, "admitted": 0})
    assert "| no Retry-After |" in scenario_table([row])


def test_render_puts_targets_first_then_each_scenario() -> None:
    sections = [Section("bursty", "Bursty", ["capacity 2 req/s"], _rows()[:4]),
                Section("azure-conv", "Azure conv", ["DATA ABSENT: x"], [])]  # fmt: skip
    text = render(sections, {"command": "python -m loadtests.slo"}, {"gateway": "default"})
    assert text.index("## Targets of the issue") < text.index("## Bursty")
    assert "- DATA ABSENT: x\n\n(no rows)" in text
    assert "- `gateway`: default" in text


def test_goodput_against_a_direct_that_served_none_in_time() -> None:
    rows = [r if not (r["target"] == "direct" and r["load"] == "3x") else {**r, "goodput": 0.0}
            for r in _rows()]  # fmt: skip
    checks = check_targets(rows)
    assert checks[2].met is True
    assert "goodput inf direct" in checks[2].detail
    assert "| 3x | gateway | 100 | 62.0% | inf |" in scenario_table(rows[4:8])
