"""Real runs pooled per cell, and the run-to-run spread the comparison table reports."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import pytest

from loadtests.calibration.table import run_spread
from loadtests.calibration.workload import Plan, pooled


def run(ttfts: list[float], tpot: float = 0.03) -> list[dict[str, Any]]:
    samples = [{"ttft_s": t, "tpot_s": tpot, "prompt_tokens": 10} for t in ttfts]
    cell = {"name": "L10 c1", "length": 10, "concurrency": 1, "prefix_hit": False}
    return [{**cell, "samples": samples, "ttft_p50_s": sorted(ttfts)[len(ttfts) // 2],
             "tpot_p50_s": tpot}]  # fmt: skip


def test_runs_pool_their_samples_and_medians_are_recomputed() -> None:
    (cell,) = pooled([run([0.1, 0.2, 0.3]), run([0.4, 0.5, 0.6])])
    assert len(cell["samples"]) == 6
    assert cell["ttft_p50_s"] == pytest.approx(0.35)
    assert cell["prompt_tokens"] == 10


def test_spread_is_the_largest_distance_of_a_run_from_the_pool() -> None:
    line = run_spread([run([0.1, 0.2, 0.3]), run([0.4, 0.5, 0.6], tpot=0.033)])
    # pooled TTFT median 0.35: runs at 0.2 (-43%) and 0.5 (+43%); pooled TPOT 0.0315.
    assert "up to 43% (TTFT) and 5% (TPOT)" in line
    assert "single runs (2)" in line


def test_a_plan_survives_its_json_form() -> None:
    plan = Plan(lengths=(1, 2), concurrencies=(3,), rounds=5, passes=2)
    assert Plan.from_dict(asdict(plan)) == plan
