"""The demo banner's account of ``route: auto``: the split, what scores it, and what that
score is fitted on, for the demo policy as shipped and as a user may edit it."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

import pytest

from gateway.classify.text_model import write_model
from gateway.commands.demo import auto_routing
from gateway.policy import load_policy_text
from tests.support.text_models import toy_model

DEMO = files("gateway").joinpath("defaults/demo.yaml").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("extra", "wanted", "unwanted"),
    [
        (
            "",
            ["difficulty >= 0.70 -> large, else -> small", "words, word pairs, ten cues",
             "fitted on RouteLLM's MMLU and GSM8K outcomes", "the top 30% of those prompts"],
            ["heuristic"],
        ),
        (
            "classify: {model: {enabled: false}}\n",
            ["-> large, else -> small", "scored by the cue-word heuristic"],
            ["RouteLLM"],
        ),
    ],
)  # fmt: skip
def test_the_banner_says_what_scores_the_split(
    extra: str, wanted: list[str], unwanted: list[str]
) -> None:
    text = auto_routing(load_policy_text(DEMO + extra))
    assert [w for w in wanted if w not in text] == []
    assert [u for u in unwanted if u in text] == []


def test_a_weights_file_of_ones_own_is_named_not_described(tmp_path: Path) -> None:
    weights = tmp_path / "mine.json.gz"
    write_model(toy_model(embedding=False), weights)
    text = auto_routing(load_policy_text(DEMO + f"classify: {{model: {{weights: {weights}}}}}\n"))
    assert f"scored by the learned difficulty model in {weights}" in text
    assert "RouteLLM" not in text
