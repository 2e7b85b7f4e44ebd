"""The cross-encoder: its int8 weights file, and scoring with a tiny encoder of the same shape."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gateway.cache.judgement.cross_encoder import (
    CrossEncoderFile,
    build_encoder,
    dequantise,
    load_cross_encoder,
    quantise,
)
from gateway.cache.judgement.false_hit_bound import bound_curve

TINY = {
    "hidden_size": 16,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 32,
    "vocab_size": 30522,  # the bundled tokenizer's
    "max_position_embeddings": 64,
    "type_vocab_size": 2,
    "hidden_act": "gelu",
    "layer_norm_eps": 1e-12,
    "pad_token_id": 0,
}


def test_quantised_matrices_come_back_within_half_a_step() -> None:
    rng = np.random.default_rng(0)
    state = {"w": rng.normal(size=(40, 30)).astype(np.float32), "b": np.ones(30, np.float32)}
    stored = quantise(state)
    assert stored["w"].dtype == np.int8
    assert stored["w:scale"].shape == (40, 1)
    assert stored["b"].dtype == np.float16
    back = dequantise(stored)
    step = np.abs(state["w"]).max(axis=1, keepdims=True) / 127
    assert np.all(np.abs(back["w"] - state["w"]) <= step / 2 + 1e-6)
    assert set(back) == {"w", "b"}


def tiny_file(seed: int = 0) -> CrossEncoderFile:
    import torch

    torch.manual_seed(seed)
    encoder = build_encoder(TINY, _random_state())
    state = {k: v.numpy() for k, v in encoder.state_dict().items() if "position_ids" not in k}
    head = np.r_[np.random.default_rng(seed).normal(size=16), 0.1].astype(np.float32)
    curve = bound_curve(np.linspace(0.1, 0.9, 500), (np.arange(500) % 50 != 0).astype(float))
    return CrossEncoderFile(
        tensors=quantise(state),
        head=head,
        config=TINY,
        max_tokens=32,
        curve=curve,
        curve_no_guard=curve,
        meta={"min_cosine": 0.7, "layers": 2},
    )


def _random_state() -> dict[str, Any]:
    from transformers import BertConfig, BertModel

    model = BertModel(BertConfig(**TINY), add_pooling_layer=False)
    return {k: v.numpy() for k, v in model.state_dict().items()}


def test_the_weights_file_round_trips(tmp_path: Path) -> None:
    original = tiny_file()
    original.save(tmp_path / "ce.npz")
    again = CrossEncoderFile.read(tmp_path / "ce.npz")
    assert again.config == TINY
    assert again.max_tokens == 32
    assert again.meta == original.meta
    assert again.curve.to_dict() == original.curve.to_dict()
    for name, value in original.tensors.items():
        assert np.array_equal(again.tensors[name], value), name


def test_scores_are_probabilities_and_do_not_depend_on_the_batch(tmp_path: Path) -> None:
    tiny_file().save(tmp_path / "ce.npz")
    model = load_cross_encoder(tmp_path / "ce.npz", threads=1)
    pairs = [("how do I reset my password?", "how can I reset my password?"),
             ("what is the capital of france?", "what is the capital of australia?"),
             ("a", "a much longer question than the first one, to pad the batch")]  # fmt: skip
    together = model.score(pairs)
    alone = [model.score([p])[0] for p in pairs]
    assert all(0.0 < p < 1.0 for p in together)
    assert together == pytest.approx(alone, abs=1e-4)
    assert model.score([]) == []


@pytest.mark.parametrize("content", [b"not a zip", b""])
def test_a_file_that_is_not_a_cross_encoder_is_refused(tmp_path: Path, content: bytes) -> None:
    (tmp_path / "bad.npz").write_bytes(content)
    with pytest.raises(ValueError, match="not a cross-encoder"):
        CrossEncoderFile.read(tmp_path / "bad.npz")
