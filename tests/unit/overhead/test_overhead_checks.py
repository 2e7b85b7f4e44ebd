"""The overhead benchmark's verdicts on issue 33's targets, from its rows (no run), and the
CPU reading of a process tree."""

from __future__ import annotations

import math
import os
from typing import Any

import pytest

from loadtests.overhead.cli import checks
from loadtests.overhead.cpu import tree_cpu_s
from loadtests.overhead.measure import PathStats


def _results(gw_cpu: float, gw_ratio: float, gw_rps: float) -> dict[str, list[dict[str, Any]]]:
    return {
        "cpu": [
            {"target": "gateway", "cpu_us_per_token": gw_cpu},
            {"target": "nginx", "cpu_us_per_token": 10.0},
        ],
        "ttft": [
            {"target": "gateway", "concurrency": 64, "p50_ratio": gw_ratio},
            {"target": "nginx", "concurrency": 64, "p50_ratio": 1.05},
            {"target": "gateway", "concurrency": 16, "p50_ratio": 9.0},  # not the level asked
        ],
        "capacity": [
            {"target": "gateway", "max_rps": gw_rps},
            {"target": "vllm-router", "max_rps": 600.0},
        ],
    }


@pytest.mark.parametrize(
    ("gw_cpu", "gw_ratio", "gw_rps", "verdicts"),
    [
        (20.0, 1.04, 600.0, ["met", "met", "met"]),
        (20.1, 1.04, 600.0, ["MISSED", "met", "met"]),
        (15.0, 1.10, 600.0, ["met", "MISSED", "met"]),  # within 1.15x but above nginx's
        (15.0, 1.04, 599.9, ["met", "met", "MISSED"]),
    ],
)
def test_checks(gw_cpu: float, gw_ratio: float, gw_rps: float, verdicts: list[str]) -> None:
    lines = checks(_results(gw_cpu, gw_ratio, gw_rps))
    assert [line.rsplit(": ", 1)[1] for line in lines] == verdicts


def test_checks_judge_the_floor_by_the_same_targets_after_the_gateway() -> None:
    results = _results(15.0, 1.04, 600.0)
    results["cpu"].append({"target": "floor", "cpu_us_per_token": 25.0})
    results["ttft"].append({"target": "floor", "concurrency": 64, "p50_ratio": 1.06})
    results["capacity"].append({"target": "floor", "max_rps": 650.0})
    lines = checks(results)
    assert [line.split(": ", 2)[1].split()[0] for line in lines] == ["gateway"] * 3 + ["floor"] * 3
    assert [line.rsplit(": ", 1)[1] for line in lines[3:]] == ["MISSED", "MISSED", "met"]


def test_checks_say_nothing_of_what_did_not_run() -> None:
    assert checks({"cpu": [{"target": "gateway", "cpu_us_per_token": 1.0}]}) == []


def test_tree_cpu_reads_this_process() -> None:
    before = tree_cpu_s(os.getpid())
    sum(i * i for i in range(200_000))
    assert tree_cpu_s(os.getpid()) >= before > 0


@pytest.mark.parametrize(
    ("cpu_s", "completed", "expected"),
    [(0.002, 4, 500.0), (1.5, 1000, 1500.0), (0.0, 10, 0.0)],
)
def test_cpu_per_request(cpu_s: float, completed: int, expected: float) -> None:
    stats = PathStats(completed=completed, cpu_s=cpu_s)
    assert stats.cpu_us_per_request() == pytest.approx(expected)


def test_cpu_per_request_of_nothing_is_nan() -> None:
    assert math.isnan(PathStats(cpu_s=1.0).cpu_us_per_request())
