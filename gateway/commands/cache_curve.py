"""The verifier's calibration curve as text: what ``latency-gateway cache-curve`` prints."""

from __future__ import annotations

import numpy as np

from gateway.cache.judgement.verifier import Curve, Verifier
from gateway.schema.cache_settings import DEFAULT_MAX_FALSE_HIT_RATE

RATES = (0.01, 0.02, 0.05, 0.1, 0.15, 0.2)


def curve_report(verifier: Verifier, points: int = 20) -> list[str]:
    meta = verifier.meta
    lines = [
        f"Calibration: {meta.get('qqp_calibration_pairs', '?')} QQP train-split pairs held out "
        f"from the fit ({meta.get('calibration_mix', '?')} label mix); fitted on "
        f"{meta.get('qqp_fit_pairs', '?')} QQP pairs and "
        f"{meta.get('near_miss_train_pairs', '?')} written near-miss pairs.",
        f"Candidates below cosine {verifier.min_cosine:.2f} are refused without scoring.",
    ]
    for guard in (True, False):
        heading = "on (default)" if guard else "off"
        lines += ["", f"guard {heading}: max_false_hit_rate -> threshold: precision, recall"]
        lines += [_rate_line(verifier.curve_for(guard), rate) for rate in RATES]
    lines += ["", "curve, guard on: threshold  precision  recall"]
    curve = verifier.curve
    rows = np.unique(np.linspace(0, len(curve.thresholds) - 1, points).astype(int))
    for i in rows:
        lines.append(
            f"  {curve.thresholds[i]:.4f}   {curve.precision[i]:.3f}      {curve.recall[i]:.3f}"
        )
    return lines


def _rate_line(curve: Curve, rate: float) -> str:
    mark = "  (default)" if rate == DEFAULT_MAX_FALSE_HIT_RATE else ""
    t = curve.threshold_for(rate)
    if t > 1.0:
        return f"  {rate:<6} -> none: no threshold is that precise, no semantic hit{mark}"
    precision, recall = curve.at(t)
    return f"  {rate:<6} -> {t:.4f}: {precision:.3f}, {recall:.3f}{mark}"
