"""The cross-encoder's bound-recall curve as text (``latency-gateway cache-curve``).

For each bound (``max_false_hit_rate``) the threshold that
``gateway/cache/judgement/false_hit_bound.py`` picks on the held-out calibration pairs, with
the precision, recall and hit count there, then the P-CHR AUC of the calibration curve and a
few rows of it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gateway.cache.judgement.cross_encoder import CrossEncoderFile, shipped_path
from gateway.cache.judgement.false_hit_bound import NEVER, BoundCurve
from gateway.schema.cache_settings import DEFAULT_MAX_FALSE_HIT_RATE

RATES = (0.01, 0.02, 0.05, 0.1, 0.15, 0.2)


def bound_report(weights: CrossEncoderFile, points: int = 12) -> list[str]:
    meta = weights.meta
    curve = weights.curve
    lines = [
        f"Cross-encoder ({meta.get('layers', '?')} layers, int8): bound curve on "
        f"{curve.pairs} QQP train-split pairs held out from the fit "
        f"({meta.get('calibration_mix', '?')} label mix, {curve.positives} duplicates); "
        f"fitted on {meta.get('steps', '?')} steps of {meta.get('batch', '?')} pairs drawn "
        f"(after: {meta.get('init') or 'nothing'}) "
        f"from {meta.get('qqp_fit_pairs', '?')} QQP pairs and "
        f"{meta.get('written_pairs', '?')} written pairs.",
        f"Read only for the best candidate at cosine {meta.get('min_cosine', '?')} or more; "
        f"each threshold keeps the false-hit rate under the bound with "
        f"{curve.confidence:.0%} confidence (fixed-sequence, Clopper-Pearson).",
    ]
    for guard in (True, False):
        c = weights.curve if guard else weights.curve_no_guard
        lines += [
            "",
            f"guard {'on (default)' if guard else 'off'}: bound -> threshold: precision, "
            f"recall, hits (P-CHR AUC {c.chr_auc():.3f})",
        ]
        lines += [_rate_line(c, rate) for rate in RATES]
    lines += ["", "curve, guard on: threshold  precision  recall  hit ratio"]
    if len(curve.thresholds):
        rows = np.unique(np.linspace(0, len(curve.thresholds) - 1, points).astype(int))
        for i in rows:
            precision, recall, hits = curve.at(float(curve.thresholds[i]))
            lines.append(
                f"  {curve.thresholds[i]:.4f}   {precision:.3f}      {recall:.3f}   "
                f"{hits / max(1, curve.pairs):.3f}"
            )
    return lines


def _rate_line(curve: BoundCurve, rate: float) -> str:
    mark = "  (default)" if rate == DEFAULT_MAX_FALSE_HIT_RATE else ""
    t = curve.threshold_for(rate)
    if t >= NEVER:
        return f"  {rate:<5} -> none: no threshold passes, no semantic hit{mark}"
    precision, recall, hits = curve.at(t)
    return f"  {rate:<5} -> {t:.4f}: {precision:.3f}, {recall:.3f}, {hits}{mark}"


def cross_encoder_report(path: str | None, points: int = 12) -> list[str]:
    """The report of the weights in ``path`` or the shipped ones (a line saying so when
    this install has none)."""
    found = Path(path) if path is not None else shipped_path()
    if found is None:
        return [
            "Cross-encoder: no weights in this install (python -m loadtests.fit.cross_encoder)."
        ]
    return bound_report(CrossEncoderFile.read(found), points)
