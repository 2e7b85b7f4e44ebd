"""Tables, target checks and the report text of the peer comparison (pure)."""

from __future__ import annotations

import math

from loadtests.overhead.measure import PathStats
from loadtests.peers.overhead_suite import level_rows
from loadtests.peers.report import Results, render
from loadtests.peers.tables import (
    bursty_table,
    cancel_table,
    check_targets,
    checks_table,
    compact_bursty,
    compact_cancel,
    compact_overhead,
    load_row,
    overhead_table,
    prefix_table,
)


def _stats(ttft_ms: float, completed: int, seconds: float = 1.0) -> PathStats:
    return PathStats(ttft=[ttft_ms / 1000] * 10, completed=completed, seconds=seconds)


def _overhead() -> list[dict[str, object]]:
    rows = []
    for c, gw in ((16, 22.0), (64, 21.5)):
        stats = {"direct": _stats(20.0, 100), "gateway": _stats(gw, 99),
                 "litellm": _stats(300.0, 20)}  # fmt: skip
        flat = {"direct": _stats(0, 2500), "gateway": _stats(0, 1500 + c),
                "litellm": _stats(0, 19)}  # fmt: skip
        rows += level_rows(c, stats, flat)
    return rows


def _summary(p50: float, p99: float, shed: float, hits: float | None = None) -> dict[str, object]:
    summary: dict[str, object] = {
        "requests": 100, "ttft_ms": {"p50": p50, "p99": p99}, "goodput_rps": 6.5,
        "shed_rate": shed, "error_rate": 0.0, "errors": {},
    }  # fmt: skip
    if hits is not None:
        summary["fleet_counters"] = {
            "vllm:prefix_cache_hits_total": hits,
            "vllm:prefix_cache_queries_total": 100.0,
        }
    return summary


def _bursty() -> list[dict[str, object]]:
    runs = {"gateway": (200, 1700, 0.5), "nginx": (400, 3000, 0.3),
            "vllm-router": (500, 2400, 0.2)}  # fmt: skip
    return [load_row("bursty", "3x", n, _summary(*v)) for n, v in runs.items()]


def test_level_rows_give_ratios_to_direct_and_max_rps() -> None:
    rows = _overhead()
    gw64 = next(r for r in rows if r["target"] == "gateway" and r["concurrency"] == 64)
    assert gw64["p50_ratio"] == 1.075
    assert gw64["max_rps"] == 1564.0
    direct = next(r for r in rows if r["target"] == "direct")
    assert direct["p50_ratio"] == 1.0


def test_level_rows_without_direct_have_no_ratio() -> None:
    rows = level_rows(1, {"gateway": _stats(20.0, 10)}, {})
    assert "p50_ratio" not in rows[0]
    assert rows[0]["max_rps"] is None


def test_checks_report_measured_numbers() -> None:
    checks = check_targets(_overhead(), _bursty())
    assert [c.met for c in checks] == [True, True, False]
    assert checks[0].detail == "1.075x"
    assert "1,564 vs 19 req/s" in checks[1].detail
    # 2400 / 1700 = 1.41x < 1.5x: missed, with every peer's figure
    assert "vllm-router 2,400 ms (1.41x)" in checks[2].detail
    assert "nginx 3,000 ms (1.76x)" in checks[2].detail
    assert "**no**" in checks_table(checks)


def test_checks_not_run_without_their_suites() -> None:
    checks = check_targets([], [])
    assert [c.met for c in checks] == [None, None, None]
    assert checks_table(checks).count("not run") == 3


def test_load_row_hit_rate_and_missing_counters() -> None:
    assert (
        load_row("prefix", "-", "gateway", _summary(90, 300, 0.0, 72.0))["prefix_hit_rate"] == 0.72
    )
    assert load_row("bursty", "3x", "direct", _summary(1, 2, 0.0))["prefix_hit_rate"] is None


def test_tables_render_every_row_and_configuration() -> None:
    notes = {"gateway": "admission", "nginx": "least_conn, limit_conn 48"}
    text = bursty_table(_bursty(), notes)
    assert "| 3x | nginx | least_conn, limit_conn 48 | 400 / 3,000 | 6.50 | 30.0% | 0.0% |" in text
    prefix = prefix_table([load_row("prefix", "-", "gateway", _summary(90, 300, 0.0, 72.0))], {})
    assert "72.0%" in prefix
    overhead = overhead_table(_overhead())
    assert "| 64 | gateway | 21.50 / 21.50 | 1.07x / 1.07x |" in overhead


def test_cancel_table_marks_phases_a_peer_cannot_be_in() -> None:
    rows = [
        {"target": "nginx", "phase": "queued"},
        {"target": "nginx", "phase": "first_token", "trials": 5, "detected": 5,
         "p50_ms": 0.4, "p99_ms": 1.2, "max_ms": 1.3},
        {"target": "vllm-router", "phase": "first_token", "trials": 4, "detected": 0,
         "p50_ms": None, "p99_ms": None, "max_ms": None},
    ]  # fmt: skip
    text = cancel_table(rows)
    assert "| nginx | queued | n/a (no admission queue) |" in text
    assert "| nginx | first_token | 5/5 | 0.40 | 1.20 | 1.30 |" in text
    assert "| vllm-router | first_token | 0/4 | - | - | - |" in text


def test_report_has_checks_and_only_sections_that_ran() -> None:
    results = Results(overhead=_overhead(), bursty=_bursty(), notes={"bursty": {}})
    text = render(results, {"machine": "2 cores"})
    assert "## Targets (issue 12)" in text
    assert "## Overhead" in text
    assert "## Bursty mixed-length load" in text
    assert "## Cancellation" not in text
    assert "## Shared-prefix" not in text
    assert "- machine: 2 cores" in text
    assert "![Overhead](overhead.png)" in text


def test_nan_renders_as_a_dash() -> None:
    rows = level_rows(1, {"direct": PathStats(), "gateway": _stats(20.0, 10)}, {})
    assert math.isnan(rows[0]["ttft_p50_ms"])
    assert "| 1 | direct | - / - |" in overhead_table(rows)


def test_compact_tables_have_one_row_per_target() -> None:
    overhead = compact_overhead(_overhead())
    assert "| target | TTFT p50 vs direct: c=16 | c=64 | max req/s |" in overhead
    assert "| gateway | 1.10x | 1.07x | 1,564 |" in overhead
    bursty = compact_bursty(_bursty())
    assert "| nginx | 3,000 / 6.50 / 30.0% / 0.0% |" in bursty
    cancel = compact_cancel(
        [
            {"target": "nginx", "phase": "queued"},
            {"target": "vllm-router", "phase": "first_token", "trials": 4, "detected": 0,
             "p50_ms": None},
            {"target": "gateway", "phase": "first_token", "trials": 4, "detected": 4,
             "p50_ms": 0.34},
        ]
    )  # fmt: skip
    assert "| nginx | n/a | n/a |" in cancel
    assert "| vllm-router | n/a | - (4 of 4 missed) |" in cancel
    assert "| gateway | n/a | 0.34 |" in cancel
