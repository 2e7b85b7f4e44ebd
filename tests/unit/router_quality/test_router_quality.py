"""The routing-quality benchmark and the default weights' fit, on a tiny stand-in dataset."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from gateway.classify.fitting.text_fit import Described
from loadtests.fit.router_weights import cli as fit_router_weights
from loadtests.fit.text_router import cli as fit_text_router
from loadtests.kit import routellm as data
from loadtests.kit.embedding_cache import embeddings, save, text_key
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


@pytest.mark.parametrize(
    ("prompt", "held"),
    [
        ("How do I learn Python?", True),  # SHA-1 mod 5 == 0
        ("Why is the sky blue?", True),
        ("What is the capital of France?", False),  # 3
        ("hello", False),  # 1
    ],
)
def test_the_held_out_fifth_is_fixed_by_the_text(prompt: str, held: bool) -> None:
    assert fit_text_router.held_out(prompt) is held


def test_the_held_out_fifth_is_about_a_fifth() -> None:
    prompts = [f"How do I learn topic {i}?" for i in range(2000)]
    assert 300 < sum(map(fit_text_router.held_out, prompts)) < 500


def test_a_distilled_candidate_weighs_chat_prompts_by_its_chat_weight() -> None:
    # The same asks as chat and as not; the teacher disagrees between the copies on "beta".
    asks = [f"red {'beta' if i % 2 else 'gamma'} blue" for i in range(100)] * 2
    teacher = np.asarray(
        [[0.99, 0.1 if "beta" in a and i < 100 else 0.95] for i, a in enumerate(asks)]
    )
    chatty = np.asarray([i < 100 for i in range(200)])
    seen = Described.of(asks)
    probe = Described.of(["red beta blue", "red gamma blue"])

    def beta_over_gamma(weight: float) -> float:
        candidate = fit_text_router.Imitating(l2=1.0, min_df=1, chat_weight=weight)
        gains = candidate.fit(seen, teacher, chatty).gains(probe.features, probe.terms)
        return float(gains[0] - gains[1])

    assert beta_over_gamma(10.0) > beta_over_gamma(1.0) + 0.2
    assert fit_text_router.Imitating(3.0, 5, 10.0).label() == "l2 3, min_df 5, chat weight 10"


def test_the_cache_encodes_missing_texts_shortest_first(tmp_path: Path) -> None:
    batches: list[list[str]] = []

    class Encoder:
        dim = 2

        def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
            batches.append(list(texts))
            return np.ones((len(texts), 2), dtype=np.float32)

    texts = ["a" * n for n in (50, 3, 200, 1, 80)]
    out = embeddings(texts, tmp_path / "e.npz", Encoder)
    assert out.shape == (5, 2)
    assert [len(t) for batch in batches for t in batch] == [1, 3, 50, 80, 200]
    assert embeddings(texts, tmp_path / "e.npz", Encoder).shape == (5, 2)
    assert len(batches) == 1  # stored: nothing encoded again
