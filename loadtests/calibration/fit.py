"""The simulator's cost coefficients fitted to a real server's measurements.

Algorithm: minimise, over the step-time coefficients of ``sim/profile.py`` (``base_s``,
``per_prefill_token_s``, ``per_running_seq_s``, ``per_context_token_s``,
``per_prefill_attention_s``, ``per_cached_chunk_s``) and the front end's ``frontend_s``,
the ``p``-norm (``p`` = 8: close to the largest error, yet smooth enough to descend) of the
log errors ``log(sim / real)`` of every cell's TTFT p50 and TPOT p50, where ``sim`` comes
from replaying the same workload on the engine in virtual time (``replay.py``). Nelder-Mead
over the logarithms of the coefficients (so they stay positive and scale-free), restarted
``restarts`` times from its last answer (a restart rebuilds the simplex, which gets it out
of the flat spots the discrete steps of the engine make). Coefficients are rounded to three
significant digits.

Parameters: the real cells, the profile to start from (its other fields are kept), the
``Plan`` the cells were measured with, ``max_evals`` per restart, ``restarts``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.optimize import minimize

from loadtests.calibration.replay import replay
from loadtests.calibration.workload import Plan
from loadtests.sim.profile import Profile

STEP_FIELDS = (
    "base_s",
    "per_prefill_token_s",
    "per_running_seq_s",
    "per_context_token_s",
    "per_prefill_attention_s",
    "per_cached_chunk_s",
)
FLOOR = 1e-12  # log of 0 is undefined; a coefficient this small is 0 in effect
NORM = 8


def with_coefficients(profile: Profile, values: Sequence[float]) -> Profile:
    """``profile`` with the step-time fields then ``frontend_s`` replaced by ``values``."""
    step = dict(zip(STEP_FIELDS, values[: len(STEP_FIELDS)], strict=True))
    return profile.model_copy(
        update={
            "step_time": profile.step_time.model_copy(update=step),
            "frontend_s": values[len(STEP_FIELDS)],
        }
    )


def coefficients(profile: Profile) -> list[float]:
    step = profile.step_time
    return [*(float(getattr(step, name)) for name in STEP_FIELDS), profile.frontend_s]


def log_errors(real: Sequence[dict[str, Any]], sim: Sequence[dict[str, Any]]) -> list[float]:
    """``log(sim / real)`` of TTFT p50 then TPOT p50, cell by cell (matched by name)."""
    by_name = {c["name"]: c for c in sim}
    return [
        math.log(by_name[r["name"]][key] / r[key])
        for key in ("ttft_p50_s", "tpot_p50_s")
        for r in real
    ]


def loss(profile: Profile, real: Sequence[dict[str, Any]], plan: Plan) -> float:
    tokens = {c["name"]: int(c["prompt_tokens"]) for c in real}
    errors = np.abs(log_errors(real, replay(profile, plan, tokens)))
    return float(np.mean(errors**NORM) ** (1 / NORM))


def fit_profile(
    real: Sequence[dict[str, Any]],
    start: Profile,
    plan: Plan,
    *,
    max_evals: int = 1500,
    restarts: int = 3,
) -> Profile:
    """The profile, from ``start``, whose replay best matches ``real`` (see the module)."""

    def objective(x: np.ndarray) -> float:
        return loss(with_coefficients(start, np.exp(x).tolist()), real, plan)

    x = np.log(np.maximum(coefficients(start), FLOOR))
    for _ in range(restarts):
        found = minimize(
            objective, x, method="Nelder-Mead", options={"maxfev": max_evals, "fatol": 1e-6}
        )
        x = found.x
    return with_coefficients(start, [_round(v) for v in np.exp(x).tolist()])


def _round(value: float) -> float:
    if value < 1e-10:
        return 0.0
    return float(f"{value:.3g}")
