"""Compile the policy's difficulty routing: the learned model (``classify.model``), whether
its score reads the request's embedding, and the difficulty split of ``route: auto``
(``routing.auto``), with the problems that stop them.

The model is on by default: the bundled text model (``classify/text_model.py``), or the file
``classify.model.weights`` names: a text model (format 2, ``loadtests.fit.text_router``) or
an embedding-only model (format 1, ``classify/model.py``, as ``fit-router`` writes, which
always embeds for routing). ``classify.model.embedding: true`` scores with a text model's
embedding part (``VectorUse.EMBED``); by default no embedding is read. The kNN vote
(``classify.knn``) blends into the heuristic's score only, so it asks for the model off.

The weights file is read here, once per policy load, never per request. The split needs the
file even with the model off: its heuristic quantiles turn a ``large_share`` into a threshold
on the heuristic score.
"""

from __future__ import annotations

from dataclasses import dataclass

from gateway.classify.model import FORMAT as EMBEDDING_ONLY
from gateway.classify.model import DifficultyModel
from gateway.classify.split import DifficultySplit, model_size, split_pools, split_threshold
from gateway.classify.text_model import TextModel, read_model_json
from gateway.classify.vector_use import VectorUse
from gateway.schema import DifficultyModelSettings, Policy
from gateway.schema.problems import FieldProblem

Learned = TextModel | DifficultyModel


@dataclass(frozen=True, slots=True)
class DifficultyRouting:
    model: Learned | None  # the learned model, when classify.model is on
    split: DifficultySplit | None  # the difficulty split, when routing.auto applies
    vector_use: VectorUse = VectorUse.NONE


def difficulty_routing(
    policy: Policy, default_pool: str, problems: list[FieldProblem]
) -> DifficultyRouting:
    settings, auto = policy.classify.model, policy.routing.auto
    pools = sorted({b.pool for b in policy.backends})
    try:
        chosen = split_pools(
            auto.enabled,
            auto.small,
            auto.large,
            sizes={pool: _size(policy, pool) for pool in pools},
            default_pool=default_pool,
            has_rules=bool(policy.routing.rules),
        )
    except ValueError as exc:
        problems.append(FieldProblem("routing.auto", str(exc)))
        return DifficultyRouting(None, None)
    for field, name in (("small", auto.small), ("large", auto.large)):
        if name is not None and name not in pools:
            problems.append(
                FieldProblem(f"routing.auto.{field}", f"unknown pool {name!r} (known: {pools})")
            )
    if settings.enabled and policy.classify.knn.enabled:
        # The vote blends into the heuristic's score; the learned model ranks on its own.
        problems.append(
            FieldProblem(
                "classify.knn.enabled",
                "the kNN vote blends into the cue-word heuristic, which scores only with the "
                "learned model off: set classify.model.enabled: false as well",
            )
        )
    needs_file = settings.enabled or (chosen is not None and auto.threshold is None)
    model = _load(settings.weights, problems) if needs_file else None
    learned = model if settings.enabled else None
    use = _vector_use(settings, learned, problems)
    if chosen is None:
        return DifficultyRouting(learned, None, use)
    if auto.threshold is not None:
        threshold = auto.threshold
    elif model is None:
        return DifficultyRouting(learned, None, use)  # the file's problem is reported
    else:
        threshold = split_threshold(auto.large_share, model, ranked=settings.enabled)
    return DifficultyRouting(learned, DifficultySplit(chosen[0], chosen[1], threshold), use)


def _vector_use(
    settings: DifficultyModelSettings, model: Learned | None, problems: list[FieldProblem]
) -> VectorUse:
    if model is None:
        return VectorUse.NONE
    if isinstance(model, TextModel):
        if settings.embedding and model.embedding is None:
            problems.append(
                FieldProblem("classify.model.embedding", "the weights file has no embedding part")
            )
        return VectorUse.EMBED if settings.embedding else VectorUse.NONE
    return VectorUse.EMBED  # the embedding-only model scores on the embedding


def _size(policy: Policy, pool: str) -> float | None:
    """The biggest model size the pool's served model names state (None: none does)."""
    sizes = [model_size(b.model) for b in policy.backends if b.pool == pool]
    known = [size for size in sizes if size is not None]
    return max(known) if known else None


def _load(path: str | None, problems: list[FieldProblem]) -> Learned | None:
    try:
        data = read_model_json(path)
        if isinstance(data, dict) and data.get("format") == EMBEDDING_ONLY:
            return DifficultyModel.from_json(data)
        return TextModel.from_json(data)
    except ValueError as exc:
        problems.append(FieldProblem("classify.model.weights", str(exc)))
        return None
