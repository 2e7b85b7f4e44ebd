"""Step-time coefficients of a simulator profile fitted to a real server's measurements.

The profile's step time is ``base + prefill * P + seq * R + ctx * C`` (``sim/profile.py``).
From the cells without prefix hits (``workload.py``):

- ``ctx``: the slope of TPOT over prompt tokens at concurrency 1 (a decode step reads the
  whole context), and ``base + seq`` its intercept;
- ``seq``: a third of the TPOT growth from concurrency 1 to 4 at the shortest prompt;
- ``prefill``: the slope of TTFT over prompt tokens at concurrency 1, less ``ctx`` (the
  prefill step also reads the context it writes).

Least squares over the cells; negative results are clamped to 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def slope_intercept(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    return slope, my - slope * mx


def fit_step_time(cells: Sequence[dict[str, Any]]) -> dict[str, float]:
    plain = [c for c in cells if not c["prefix_hit"]]
    single = sorted((c for c in plain if c["concurrency"] == 1), key=lambda c: c["prompt_tokens"])
    xs = [float(c["prompt_tokens"]) for c in single]
    ctx, base_plus_seq = slope_intercept(xs, [c["tpot_p50_s"] for c in single])
    ttft_slope, _ = slope_intercept(xs, [c["ttft_p50_s"] for c in single])
    shortest = single[0]["length"]
    four = next(c for c in plain if c["concurrency"] == 4 and c["length"] == shortest)
    seq = max(0.0, (four["tpot_p50_s"] - single[0]["tpot_p50_s"]) / 3)
    ctx = max(0.0, ctx)
    return {
        "base_s": max(0.0, base_plus_seq - seq),
        "per_prefill_token_s": max(0.0, ttft_slope - ctx),
        "per_running_seq_s": seq,
        "per_context_token_s": ctx,
    }
