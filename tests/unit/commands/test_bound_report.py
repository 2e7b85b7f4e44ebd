"""What ``latency-gateway cache-curve`` prints for the cross-encoder: the bound-recall curve."""

from __future__ import annotations

from pathlib import Path

from gateway.commands.bound_report import bound_report, cross_encoder_report
from tests.unit.cache.judgement.test_cross_encoder import tiny_file


def test_each_bound_gets_its_threshold_and_the_curve_its_auc() -> None:
    weights = tiny_file()
    text = "\n".join(bound_report(weights, points=5))
    for rate in ("0.01", "0.02", "0.05", "0.1"):
        assert f"\n  {rate}" in text
    assert "0.02  -> " in text
    assert "(default)" in text
    assert f"P-CHR AUC {weights.curve.chr_auc():.3f}" in text
    assert text.count("guard on (default)") == 1
    t = weights.curve.threshold_for(0.1)
    assert t < 1.0
    precision, recall, hits = weights.curve.at(t)
    assert f"0.1   -> {t:.4f}: {precision:.3f}, {recall:.3f}, {hits}" in text


def test_a_report_is_read_from_a_weights_file(tmp_path: Path) -> None:
    tiny_file().save(tmp_path / "ce.npz")
    assert cross_encoder_report(str(tmp_path / "ce.npz"), 4)[0].startswith("Cross-encoder (2")
