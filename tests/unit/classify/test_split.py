"""The difficulty split of route: auto: which pools, which threshold, which pool per score."""

from __future__ import annotations

import numpy as np
import pytest

from gateway.classify.features import FEATURE_NAMES
from gateway.classify.model import DifficultyModel, Success
from gateway.classify.split import DifficultySplit, model_size, split_pools, split_threshold

SIZED = {"small": 1.5, "large": 70.0}
UNSIZED: dict[str, float | None] = {"a": None, "b": None}


@pytest.mark.parametrize(
    ("name", "size"),
    [
        ("Qwen/Qwen2.5-1.5B-Instruct", 1.5),
        ("meta-llama/Llama-3.1-70B-Instruct", 70.0),
        ("mistralai/Mixtral-8x7B-Instruct-v0.1", 56.0),
        ("google/gemma-2-9b-it", 9.0),
        ("Qwen/Qwen3-235B-A22B", 235.0),
        ("gpt-4", None),
        ("org/m", None),
        ("llama-7bit", None),
    ],
)
def test_model_size(name: str, size: float | None) -> None:
    assert model_size(name) == size


@pytest.mark.parametrize(
    ("enabled", "small", "large", "sizes", "default", "rules", "pools"),
    [
        # Said nothing: on with two pools whose model sizes differ, and no tier rules.
        (None, None, None, SIZED, "small", False, ("small", "large")),
        (None, None, None, {"big": 70.0, "tiny": 1.5}, "big", False, ("tiny", "big")),
        (None, None, None, SIZED, "small", True, None),  # tier rules: they decide
        (None, None, None, UNSIZED, "a", False, None),  # sizes unknown
        (None, None, None, {"a": 7.0, "b": 7.0}, "a", False, None),  # same size
        (None, None, None, {**SIZED, "mid": 8.0}, "small", False, None),  # three pools
        # Asked for: sizes first, else the default pool is the small one.
        (True, None, None, SIZED, "large", True, ("small", "large")),
        (True, None, None, UNSIZED, "b", False, ("b", "a")),
        (None, None, "a", UNSIZED, "a", True, ("b", "a")),  # large named: small is the other
        (None, "b", None, UNSIZED, "a", False, ("b", "a")),
        (None, "x", "y", {"x": None, "y": None, "z": None}, "z", False, ("x", "y")),
        (False, "small", "large", SIZED, "small", False, None),
    ],
)
def test_split_pools(
    enabled: bool | None,
    small: str | None,
    large: str | None,
    sizes: dict[str, float | None],
    default: str,
    rules: bool,
    pools: tuple[str, str] | None,
) -> None:
    got = split_pools(enabled, small, large, sizes=sizes, default_pool=default, has_rules=rules)
    assert got == pools


@pytest.mark.parametrize(
    ("small", "large", "sizes", "message"),
    [
        ("a", "a", UNSIZED, "must differ"),
        (None, "x", {"x": None, "y": None, "z": None}, "name both"),
    ],
)
def test_split_pools_refuses(
    small: str | None, large: str | None, sizes: dict[str, float | None], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        split_pools(None, small, large, sizes=sizes, default_pool="x", has_rules=False)


def test_threshold_from_share() -> None:
    heuristic = tuple(min(1.0, i / 50) for i in range(101))  # 0..1 over the first half
    nothing = Success(0.0, np.zeros(1), np.zeros(len(FEATURE_NAMES)))
    model = DifficultyModel(nothing, nothing, heuristic, heuristic)
    assert split_threshold(0.3, model, ranked=True) == pytest.approx(0.7)
    assert split_threshold(0.75, model, ranked=False) == pytest.approx(0.5)
    assert split_threshold(0.3, model, ranked=False) == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("score", "pool", "reason"),
    [
        (0.69, "s", "auto:small<0.70"),
        (0.7, "l", "auto:large>=0.70"),
        (1.0, "l", "auto:large>=0.70"),
    ],
)
def test_split_decides(score: float, pool: str, reason: str) -> None:
    split = DifficultySplit("s", "l", 0.7)
    assert split.pool(score) == pool
    assert split.reason(score) == reason
