"""route: auto by difficulty: the policy's split and learned model, compiled and planned."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from gateway.classify.features import FEATURE_NAMES
from gateway.classify.model import DifficultyModel, Success, load_model
from gateway.classify.text_model import TextModel, load_text_model, write_model
from gateway.classify.vector_use import VectorUse
from gateway.embedding import Vectors
from gateway.openai.request import ParsedRequest
from gateway.path.context import RequestContext, classify
from gateway.path.plan import plan_pool
from gateway.policy import PolicyError, load_policy_text
from gateway.policy.compile import CompiledPolicy
from tests.support.policies import SMALL_LARGE
from tests.support.text_models import toy_model

TWO_POOLS = SMALL_LARGE + "routing:\n  default_pool: small\n"
UNSIZED = TWO_POOLS.replace("Qwen/Qwen2.5-1.5B-Instruct", "m").replace(
    "meta-llama/Llama-3.1-70B-Instruct", "m"
)
EASY = "Translate 'good morning' into French."
HARD = (
    "Prove that the sum of the reciprocals of the primes diverges, derive each inequality "
    "step by step and explain why the bound holds; the proof must be rigorous."
)


def _plan(policy: CompiledPolicy, text: str, vector: Vectors | None = None) -> tuple[str, str]:
    body = {"model": "auto", "messages": [{"role": "user", "content": text}]}
    request = ParsedRequest("chat", "auto", False, body)
    ctx = RequestContext("r", 0.0, request, policy, {}, query_vector=vector)
    plan = plan_pool(ctx)
    return plan.pool.name, plan.reason


def test_two_sized_pools_and_no_rules_split_by_the_learned_text_model() -> None:
    policy = load_policy_text(TWO_POOLS)
    split = policy.auto_split
    assert split is not None
    assert (split.small, split.large) == ("small", "large")
    assert split.threshold == pytest.approx(0.7)  # ranks: the top 30% of its training prompts
    assert isinstance(policy.classify.model, TextModel)
    assert policy.classify.vector_use is VectorUse.NONE  # no embedding read, none made
    pool, reason = _plan(policy, HARD)
    assert reason.startswith(f"auto:{pool}")
    assert reason.endswith(";by=model")


def test_with_the_model_off_the_heuristic_splits() -> None:
    policy = load_policy_text(TWO_POOLS + "classify: {model: {enabled: false}}\n")
    split = policy.auto_split
    assert split is not None
    # The heuristic's own 70% quantile on the training prompts: 30% of them would go large.
    points = load_text_model().heuristic_quantiles
    assert points[69] <= split.threshold <= points[71]
    assert policy.classify.model is None
    assert policy.classify.vector_use is VectorUse.NONE
    easy, hard = _plan(policy, EASY), _plan(policy, HARD)
    assert easy[0] == "small"
    assert easy[1].startswith(f"auto:small<{split.threshold:.2f};len=short;diff=")
    assert hard[0] == "large"
    assert hard[1].startswith("auto:large>=")
    assert ";by=" not in hard[1]  # the plain heuristic score, as before


@pytest.mark.parametrize(
    ("extra", "base", "pools", "threshold"),
    [
        ("routing: {default_pool: small, rules: [{name: r, pool: large}]}", TWO_POOLS, None, None),
        ("", UNSIZED, None, None),  # model sizes unknown: no guess
        ("routing: {auto: {enabled: false}}", TWO_POOLS, None, None),
        ("routing: {auto: {large: large}}", UNSIZED, ("small", "large"), None),
        ("routing: {auto: {enabled: true, threshold: 0.4}}", UNSIZED, ("small", "large"), 0.4),
        ("routing: {auto: {threshold: 0.9}}", TWO_POOLS, ("small", "large"), 0.9),
        ("classify: {model: {enabled: true}}", TWO_POOLS, ("small", "large"), 0.7),
        (
            "classify: {model: {enabled: true}}\nrouting: {auto: {large_share: 0.1}}",
            TWO_POOLS,
            ("small", "large"),
            0.9,
        ),
    ],
)
def test_when_the_split_applies(
    extra: str, base: str, pools: tuple[str, str] | None, threshold: float | None
) -> None:
    text = base.replace("routing:\n  default_pool: small\n", "") if "routing:" in extra else base
    split = load_policy_text(text + extra).auto_split
    if pools is None:
        assert split is None
        return
    assert split is not None
    assert (split.small, split.large) == pools
    if threshold is not None:
        assert split.threshold == pytest.approx(threshold)


@pytest.mark.parametrize(
    ("extra", "field", "message"),
    [
        ("routing: {auto: {large: huge}}", "routing.auto.large", "unknown pool 'huge'"),
        ("routing: {auto: {small: large, large: large}}", "routing.auto", "must differ"),
        (
            "classify: {model: {enabled: true, weights: /nonexistent/w.json}}",
            "classify.model.weights",
            "cannot read difficulty model",
        ),
        ("routing: {auto: {large_share: 1.5}}", "routing.auto.large_share", "less than 1"),
    ],
)
def test_problems_are_reported(extra: str, field: str, message: str) -> None:
    text = TWO_POOLS.replace("routing:\n  default_pool: small\n", "")
    with pytest.raises(PolicyError) as info:
        load_policy_text(text + extra)
    rendered = info.value.render()
    assert field in rendered
    assert message in rendered


def _toy_weights(tmp_path: Path) -> Path:
    """A 4-d model: the large model always does well, the small one fails along e0."""
    zeros = np.zeros(len(FEATURE_NAMES))
    model = DifficultyModel(
        large=Success(4.0, np.zeros(4), zeros),
        small=Success(0.0, np.asarray([-6.0, 0.0, 0.0, 0.0]), zeros),
        quantiles=tuple(-1 + i / 50 for i in range(101)),
        heuristic_quantiles=tuple(i / 100 for i in range(101)),
    )
    path = tmp_path / "toy.json"
    path.write_text(json.dumps(model.to_json()))
    return path


def test_the_learned_model_scores_with_the_embedding_and_falls_back_without(
    tmp_path: Path,
) -> None:
    weights = _toy_weights(tmp_path)
    policy = load_policy_text(
        TWO_POOLS + f"classify: {{model: {{enabled: true, weights: {weights}}}}}\n"
    )
    e0 = np.asarray([1.0, 0.0, 0.0, 0.0], dtype=np.float32)
    pool, reason = _plan(policy, EASY, e0)  # the small model fails here: large
    assert pool == "large"
    assert reason.startswith("auto:large>=0.70;len=short;diff=")
    assert reason.endswith(";top=embedding;by=model")
    assert _plan(policy, HARD, -e0)[0] == "small"  # the embedding outweighs the wording
    heuristic = _plan(policy, HARD)  # no embedding for this one: the heuristic, ranked
    assert heuristic[1].endswith(";by=heuristic")


def test_weights_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "w.json"
    model = load_model()
    flipped = model.to_json()
    flipped["about"] = "test copy"
    path.write_text(json.dumps(flipped))
    policy = load_policy_text(
        TWO_POOLS + f"classify: {{model: {{enabled: true, weights: {path}}}}}\n"
    )
    assert policy.classify.model is not None
    assert policy.classify.model.about == "test copy"


def _toy_text_weights(tmp_path: Path, *, embedding: bool) -> Path:
    path = tmp_path / "text.json.gz"
    write_model(toy_model(embedding=embedding), path)
    return path


@pytest.mark.parametrize(
    ("setting", "embedding", "use"),
    [
        ("", True, VectorUse.NONE),  # the text parts, by default
        ("embedding: true, ", True, VectorUse.EMBED),
        ("embedding: false, ", True, VectorUse.NONE),
        ("", False, VectorUse.NONE),
    ],
)
def test_whether_the_text_model_reads_embeddings(
    tmp_path: Path, setting: str, embedding: bool, use: VectorUse
) -> None:
    weights = _toy_text_weights(tmp_path, embedding=embedding)
    policy = load_policy_text(TWO_POOLS + f"classify: {{model: {{{setting}weights: {weights}}}}}\n")
    assert policy.classify.vector_use is use


def test_the_text_model_plans_with_and_without_the_embedding(tmp_path: Path) -> None:
    weights = _toy_text_weights(tmp_path, embedding=True)
    setting = f"classify: {{model: {{embedding: true, weights: {weights}}}}}\n"
    policy = load_policy_text(TWO_POOLS + setting)
    assert _plan(policy, "Tell me about alpha.")[0] == "large"  # the toy's free-form cue
    pool, reason = _plan(policy, "Tell me about beta.")
    assert (pool, reason[-9:]) == ("small", ";by=model")
    e0 = np.asarray([1.0, 0.0], dtype=np.float32)
    pool, reason = _plan(policy, "Tell me about beta.", e0)  # the embedding part's cue
    assert pool == "large"
    assert reason.endswith(";top=embedding;by=model+embedding")
    e1 = np.asarray([0.0, 1.0], dtype=np.float32)
    assert _plan(policy, "Tell me about alpha.", e1)[0] == "small"  # it alone decides


def test_an_embedding_part_the_file_lacks_is_a_problem(tmp_path: Path) -> None:
    weights = _toy_text_weights(tmp_path, embedding=False)
    with pytest.raises(PolicyError) as info:
        load_policy_text(
            TWO_POOLS + f"classify: {{model: {{embedding: true, weights: {weights}}}}}\n"
        )
    assert "classify.model.embedding" in info.value.render()
    assert "has no embedding part" in info.value.render()


def test_the_knn_vote_asks_for_the_learned_model_off() -> None:
    knn = "classify: {knn: {enabled: true}%s}\n"
    with pytest.raises(PolicyError) as info:
        load_policy_text(TWO_POOLS + knn % "")
    assert "classify.knn.enabled" in info.value.render()
    assert "classify.model.enabled: false" in info.value.render()
    policy = load_policy_text(TWO_POOLS + knn % ", model: {enabled: false}")
    assert policy.classify.model is None


@pytest.mark.parametrize(
    ("extra", "model", "reason", "counted"),
    [
        ("", "auto", "auto:", True),  # the difficulty split
        (
            "  rules:\n    - {name: all, pool: large, when: {length: [short]}}\n",
            "auto",
            "rule:all",
            True,
        ),
        ("classify: {model: {enabled: false}}\n", "auto", "auto:", True),
        ("", "fixed", "model:fixed", False),  # no pool limits a context: nothing counted
    ],
)
def test_the_plan_carries_the_length_class_and_token_count(
    extra: str, model: str, reason: str, counted: bool
) -> None:
    policy = load_policy_text(TWO_POOLS + extra)
    body = {"model": model, "messages": [{"role": "user", "content": HARD}]}
    ctx = RequestContext("r", 0.0, ParsedRequest("chat", model, False, body), policy, {})
    plan = plan_pool(ctx)
    classes = classify(ctx)
    assert plan.reason.startswith(reason)
    assert plan.length == classes.length.value
    assert plan.prompt_tokens == (classes.prompt_tokens if counted else None)


# id -> (endpoint, body beyond the model) for a named model on a pool with a context limit
NAMED: dict[str, tuple[str, dict[str, object]]] = {
    "chat": ("chat", {"messages": [{"role": "user", "content": HARD}]}),
    "completions": ("completions", {"prompt": HARD}),
    "completions, a list of prompts": ("completions", {"prompt": [EASY, HARD]}),
    "embeddings": ("embeddings", {"input": HARD}),
}  # fmt: skip


@pytest.mark.parametrize(("endpoint", "body"), NAMED.values(), ids=NAMED.keys())
def test_a_named_model_is_counted_for_its_context_check_and_not_scored(
    endpoint: str, body: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = load_policy_text(TWO_POOLS + "pools:\n  small: {max_context: 32768}\n")
    request = ParsedRequest(endpoint, "fixed", False, {"model": "fixed", **body})
    ctx = RequestContext("r", 0.0, request, policy, {})
    classes = classify(ctx)

    def scored(ctx: RequestContext) -> None:
        raise AssertionError("a named model's plan scored its difficulty")

    monkeypatch.setattr("gateway.path.plan.classify", scored)
    plan = plan_pool(ctx)
    assert (plan.prompt_tokens, plan.length) == (classes.prompt_tokens, classes.length.value)
