"""The routing-quality benchmark and the default weights' fit, on a tiny stand-in dataset."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from loadtests.fit.router_weights import cli as fit_router_weights
from loadtests.fit.text_router import cli as fit_text_router
from loadtests.kit import routellm as data
from loadtests.kit.embedding_cache import save, text_key
from loadtests.router_quality import cli as router_quality
from tests.unit.kit.test_routellm import datasets


def _cache(tmp_path: Path, root: Path) -> Path:
    """Stored vectors for every text the runs need, so no model is loaded."""
    texts = [o.prompt for read in (data.mmlu, data.gsm8k, data.mt_bench) for o in read(root)]
    rng = np.random.default_rng(0)
    path = tmp_path / "embeddings.npz"
    save(path, {text_key(t): rng.standard_normal(384).astype(np.float32) for t in texts})
    return path


def test_the_benchmark_prints_every_router_on_every_benchmark(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    root = datasets(tmp_path)
    out = tmp_path / "out"
    argv = ["--datasets", str(root), "--cache", str(_cache(tmp_path, root)), "--out", str(out)]
    assert router_quality.main(argv) == 0
    printed = capsys.readouterr().out
    for bench in ("MMLU: 1 prompts", "GSM8K: 2 prompts", "MT-Bench: 1 prompts"):
        assert bench in printed
    for router in ("random", "heuristic", "default", "default, embedding: true"):
        assert f"| {router} |" in printed
    assert "| RouteLLM causal" not in printed  # no PUBLISHED.md in the stand-in
    assert "RouteLLM's published rows are not available" in printed
    summary = json.loads((out / "summary.json").read_text())
    assert {row["router"] for row in summary["gsm8k"]} >= {"random", "default"}
    assert summary["gsm8k"][0]["apgr"] == 0.5  # random


def test_routellm_rows_are_printed_beside_ours_when_published(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = datasets(tmp_path)
    (root / "routellm" / "PUBLISHED.md").write_text(
        "## GSM8K\n\n| training data | router | CPT(50%) | CPT(80%) | APGR |\n"
        "|---|---|---|---|---|\n"
        "| D_arena + D_judge | causal LLM | 33.64% | 63.26% | 0.622 |\n"
    )
    argv = ["--datasets", str(root), "--cache", str(_cache(tmp_path, root))]
    assert router_quality.main([*argv, "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    assert "| RouteLLM causal LLM | D_arena + D_judge | 0.622 | 33.6% | 63.3% |" in printed
    assert "their best (causal LLM, D_arena + D_judge: APGR 0.622)" in printed


def test_absent_datasets_are_said_clearly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert router_quality.main(["--datasets", str(tmp_path)]) == 2
    assert fit_router_weights.main(["--datasets", str(tmp_path)]) == 2
    assert fit_text_router.main(["--datasets", str(tmp_path)]) == 2
    assert "are not at" in capsys.readouterr().err


def test_the_route_command_scores_as_the_benchmark_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The default policy through ``latency-gateway route``: the same APGR as ``default``."""
    root = datasets(tmp_path)
    policy = Path(router_quality.__file__).parent / "default_policy.yaml"
    argv = ["--datasets", str(root), "--cache", str(_cache(tmp_path, root))]
    out = tmp_path / "out"
    assert router_quality.main([*argv, "--out", str(out), "--route-policy", str(policy)]) == 0
    assert "| latency-gateway route (default_policy.yaml) | as the policy says |" in (
        capsys.readouterr().out
    )
    for bench in ("mmlu", "gsm8k", "mt_bench"):
        rows = {row["router"]: row for row in json.loads((out / "summary.json").read_text())[bench]}
        routed = rows["latency-gateway route (default_policy.yaml)"]
        assert routed["apgr"] == pytest.approx(rows["default"]["apgr"])
        assert routed["split_share"] == pytest.approx(rows["default"]["split_share"])
