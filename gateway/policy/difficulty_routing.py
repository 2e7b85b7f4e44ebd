"""Compile the policy's difficulty routing: the learned model (``classify.model``) and the
difficulty split of ``route: auto`` (``routing.auto``), with the problems that stop them.

The weights file is read here, once per policy load (a few kB of JSON), never per request.
The split needs the model's file even with the model off: its heuristic quantiles turn a
``large_share`` into a threshold on the heuristic score.
"""

from __future__ import annotations

from dataclasses import dataclass

from gateway.classify.model import DifficultyModel, load_model
from gateway.classify.split import DifficultySplit, model_size, split_pools, split_threshold
from gateway.schema import Policy
from gateway.schema.problems import FieldProblem


@dataclass(frozen=True, slots=True)
class DifficultyRouting:
    model: DifficultyModel | None  # the learned model, when classify.model is on
    split: DifficultySplit | None  # the difficulty split, when routing.auto applies


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
    needs_file = settings.enabled or (chosen is not None and auto.threshold is None)
    model = _load(settings.weights, problems) if needs_file else None
    learned = model if settings.enabled else None
    if chosen is None:
        return DifficultyRouting(learned, None)
    if auto.threshold is not None:
        threshold = auto.threshold
    elif model is None:
        return DifficultyRouting(learned, None)  # the file's problem is reported
    else:
        threshold = split_threshold(auto.large_share, model, ranked=settings.enabled)
    return DifficultyRouting(learned, DifficultySplit(chosen[0], chosen[1], threshold))


def _size(policy: Policy, pool: str) -> float | None:
    """The biggest model size the pool's served model names state (None: none does)."""
    sizes = [model_size(b.model) for b in policy.backends if b.pool == pool]
    known = [size for size in sizes if size is not None]
    return max(known) if known else None


def _load(path: str | None, problems: list[FieldProblem]) -> DifficultyModel | None:
    try:
        return load_model(path)
    except ValueError as exc:
        problems.append(FieldProblem("classify.model.weights", str(exc)))
        return None
