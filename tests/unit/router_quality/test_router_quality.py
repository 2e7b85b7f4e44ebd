"""The routing-quality benchmark and the default weights' fit, on a tiny stand-in dataset."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from gateway.classify.exemplars import read_exemplars
from loadtests.fit.router_weights import cli as fit_router_weights
from loadtests.kit import routellm as data
from loadtests.kit.embedding_cache import save, text_key
from loadtests.router_quality import cli as router_quality
from tests.unit.kit.test_routellm import datasets


def _cache(tmp_path: Path, root: Path) -> Path:
    """Stored vectors for every text the runs need, so no model is loaded."""
    texts = [o.prompt for read in (data.mmlu, data.gsm8k, data.mt_bench) for o in read(root)]
    texts += read_exemplars(router_quality.EXEMPLARS)[0]
    rng = np.random.default_rng(0)
    path = tmp_path / "embeddings.npz"
    save(path, {text_key(t): rng.standard_normal(384).astype(np.float32) for t in texts})
    return path


def test_the_benchmark_prints_every_router_on_every_benchmark(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = datasets(tmp_path)
    out = tmp_path / "out"
    argv = ["--datasets", str(root), "--cache", str(_cache(tmp_path, root)), "--out", str(out)]
    assert router_quality.main(argv) == 0
    printed = capsys.readouterr().out
    for bench in ("mmlu: 1 prompts", "gsm8k: 2 prompts", "mt_bench: 1 prompts"):
        assert bench in printed
    for router in ("random", "heuristic", "kNN vote", "learned model", "RouteLLM"):
        assert f"| {router}" in printed
    summary = json.loads((out / "summary.json").read_text())
    assert {row["router"] for row in summary["gsm8k"]} >= {"random", "learned model"}
    assert summary["gsm8k"][0]["apgr"] == 0.5  # random


def test_absent_datasets_are_said_clearly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert router_quality.main(["--datasets", str(tmp_path)]) == 2
    assert fit_router_weights.main(["--datasets", str(tmp_path)]) == 2
    assert "are not at" in capsys.readouterr().err
