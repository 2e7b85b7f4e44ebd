"""``ttft.solve`` is ``np.linalg.solve`` for the model's systems: the same result bit for bit,
the same error for a singular one, and ``np.linalg.solve`` itself for other dtypes."""

from __future__ import annotations

import numpy as np
import pytest

from gateway.backends.ttft import solve


def _system(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    m = rng.random((6, 6)) * 10
    return m @ m.T + np.diag(rng.random(6)), rng.random(6) * 5


EYE, ONES = np.eye(6), np.ones(6)
# id -> (a, b)
SYSTEMS: dict[str, tuple[np.ndarray, np.ndarray]] = {
    **{f"random {seed}": _system(seed) for seed in range(20)},
    "identity": (EYE, ONES),
    "ill-conditioned": (EYE * np.array([1e-12, 1, 1, 1, 1, 1e12]), ONES),
    "NaN in it": (np.full((6, 6), np.nan), ONES),
    "integers (numpy's own way)": (np.eye(6, dtype=np.int64), np.ones(6, dtype=np.int64)),
}


@pytest.mark.parametrize(("a", "b"), SYSTEMS.values(), ids=SYSTEMS.keys())
def test_solve_is_numpys(a: np.ndarray, b: np.ndarray) -> None:
    ours, numpys = solve(a, b), np.linalg.solve(a, b)
    assert ours.dtype == numpys.dtype
    assert np.array_equal(ours, numpys, equal_nan=True)


def test_a_singular_system_raises_as_numpy_does() -> None:
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        solve(np.zeros((6, 6)), ONES)
