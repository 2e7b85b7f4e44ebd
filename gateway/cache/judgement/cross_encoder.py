"""The cross-encoder verifier: one small transformer reads both questions together.

Algorithm: the pair is tokenised as ``[CLS] cached [SEP] asked [SEP]`` (the bundled
all-MiniLM-L6-v2 WordPiece tokenizer, truncated to ``max_tokens``), run through a BERT
encoder of ``layers`` layers (the first layers of MiniLM-L6-H384, fine-tuned as a pair
classifier: ``python -m loadtests.fit.cross_encoder``), its token states mean-pooled over the
attention mask, and a linear head gives a logit: ``p = sigmoid(w . mean(h) + b)``, the
probability that the answer cached for the first question may be served for the second.
The operating threshold on ``p`` comes from the user's ``max_false_hit_rate`` and the bound
curve stored with the weights (``false_hit_bound.py``: counts measured on held-out QQP train-split
pairs, chosen with an upper confidence bound).

Weights file (``cross_encoder.npz``): every matrix (the linear layers and the word
embeddings) as int8 with one float32 scale per output row (symmetric, ``scale = max|row| /
127``), the rest (biases, layer norms, position and type embeddings) as float16; the
encoder's config, the head, the bound curves and the fit's facts as JSON. At load, matrices
are dequantised into a float32 model and its linear layers re-quantised for inference with
torch's dynamic int8 (``quantize_dynamic``), which is what the curve was measured with.
``torch`` and ``transformers`` are imported only here, only when a cross-encoder is loaded.
``score`` is blocking and CPU-bound: call it off the event loop (``cross_worker.py``).
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from gateway.cache.judgement.false_hit_bound import BoundCurve

DEFAULT_FILE = "cross_encoder.npz"
FORMAT = 1
Arrays = dict[str, npt.NDArray[Any]]


def tokenizer_path() -> Path:
    """The bundled MiniLM's ``tokenizer.json``."""
    from gateway.embedding.encoder import default_model_path

    return default_model_path() / "tokenizer.json"


def base_config() -> dict[str, Any]:
    """The bundled MiniLM's BERT config."""
    from gateway.embedding.encoder import default_model_path

    config: dict[str, Any] = json.loads((default_model_path() / "config.json").read_text())
    return config


def quantise(state: Mapping[str, npt.NDArray[np.float32]]) -> Arrays:
    """A float32 state dict as stored: matrices int8 per row (``name`` + ``name:scale``),
    vectors float16."""
    out: Arrays = {}
    for name, value in state.items():
        if value.ndim == 2 and value.shape[0] > 2 and value.shape[1] > 2:
            scale = np.abs(value).max(axis=1, keepdims=True) / 127.0
            scale[scale == 0] = 1.0
            out[name] = np.clip(np.rint(value / scale), -127, 127).astype(np.int8)
            out[name + ":scale"] = scale.astype(np.float32)
        else:
            out[name] = value.astype(np.float16)
    return out


def dequantise(stored: Mapping[str, npt.NDArray[Any]]) -> dict[str, npt.NDArray[np.float32]]:
    out: dict[str, npt.NDArray[np.float32]] = {}
    for name, value in stored.items():
        if name.endswith(":scale"):
            continue
        scale = stored.get(name + ":scale")
        as_float = value.astype(np.float32)
        out[name] = as_float * scale if scale is not None else as_float
    return out


@dataclass(frozen=True)
class CrossEncoderFile:
    """What the weights file holds, before a model is built from it."""

    tensors: Arrays  # quantised encoder state (``quantise``), keys as in a BertModel
    head: npt.NDArray[np.float32]  # (hidden + 1,): weights then bias
    config: dict[str, Any]  # BertConfig fields (num_hidden_layers = the kept layers)
    max_tokens: int
    curve: BoundCurve  # with the guard's veto applied first (``guard: true``)
    curve_no_guard: BoundCurve
    meta: dict[str, Any] = field(default_factory=dict)

    def save(self, path: Path) -> None:
        header = {
            "format": FORMAT,
            "config": self.config,
            "max_tokens": self.max_tokens,
            "curve": self.curve.to_dict(),
            "curve_no_guard": self.curve_no_guard.to_dict(),
            "meta": self.meta,
        }
        arrays: dict[str, Any] = {"t/" + k: v for k, v in self.tensors.items()}
        arrays["header"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
        arrays["head"] = self.head.astype(np.float32)
        np.savez_compressed(path, **arrays)

    @classmethod
    def read(cls, path: Path) -> CrossEncoderFile:
        try:
            with np.load(path, allow_pickle=False) as data:
                header = json.loads(bytes(data["header"]).decode())
                tensors = {k[2:]: data[k] for k in data.files if k.startswith("t/")}
                head = data["head"].astype(np.float32)
        except (KeyError, ValueError, EOFError, zipfile.BadZipFile) as exc:
            raise ValueError(f"{path}: not a cross-encoder weights file ({exc})") from exc
        if header.get("format") != FORMAT:
            raise ValueError(f"{path}: cross-encoder file format {header.get('format')!r}")
        return cls(
            tensors=tensors,
            head=head,
            config=dict(header["config"]),
            max_tokens=int(header["max_tokens"]),
            curve=BoundCurve.from_dict(header["curve"]),
            curve_no_guard=BoundCurve.from_dict(header["curve_no_guard"]),
            meta=dict(header.get("meta", {})),
        )


def shipped_path() -> Path | None:
    """The cross-encoder weights shipped in the package (None: not built into this install)."""
    with resources.as_file(resources.files("gateway.cache.judgement") / DEFAULT_FILE) as path:
        return path if path.is_file() else None


class CrossEncoder:
    """A loaded cross-encoder: ``score`` gives each pair's probability (blocking)."""

    def __init__(self, weights: CrossEncoderFile, *, threads: int | None = None) -> None:
        import torch
        from tokenizers import Tokenizer

        if threads is not None:
            torch.set_num_threads(threads)
        self.file = weights
        self._torch = torch
        self._tokenizer = Tokenizer.from_file(str(tokenizer_path()))
        self._tokenizer.enable_truncation(weights.max_tokens, strategy="longest_first")
        self._tokenizer.no_padding()
        encoder = build_encoder(weights.config, dequantise(weights.tensors))
        self._model = torch.ao.quantization.quantize_dynamic(  # type: ignore[no-untyped-call]
            encoder, {torch.nn.Linear}, dtype=torch.qint8
        )
        self._head_w = torch.from_numpy(weights.head[:-1].copy())
        self._head_b = float(weights.head[-1])

    def score(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """Probability for each (cached, asked) pair that the cached answer may be served."""
        if not pairs:
            return []
        torch = self._torch
        encodings = self._tokenizer.encode_batch([(a, b) for a, b in pairs])
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(pairs), width), np.int64)
        types = np.zeros_like(ids)
        mask = np.zeros_like(ids)
        for i, e in enumerate(encodings):
            n = len(e.ids)
            ids[i, :n], types[i, :n], mask[i, :n] = e.ids, e.type_ids, 1
        with torch.inference_mode():
            m = torch.from_numpy(mask)
            states = self._model(
                input_ids=torch.from_numpy(ids),
                token_type_ids=torch.from_numpy(types),
                attention_mask=m,
            ).last_hidden_state
            pooled = (states * m.unsqueeze(-1)).sum(1) / m.sum(1, keepdim=True)
            logits = pooled @ self._head_w + self._head_b
            return [float(p) for p in torch.sigmoid(logits).tolist()]


def build_encoder(config: dict[str, Any], state: Mapping[str, npt.NDArray[np.float32]]) -> Any:
    """A float32 ``transformers`` BertModel (no pooler) with ``state`` loaded, in eval mode."""
    import torch
    from transformers import BertConfig, BertModel

    model = BertModel(BertConfig(**config), add_pooling_layer=False)
    tensors = {
        k: torch.from_numpy(np.ascontiguousarray(v))
        for k, v in state.items()
        if not k.endswith("position_ids")
    }
    missing, unexpected = model.load_state_dict(tensors, strict=False)
    # Buffers (position ids) are rebuilt by the model itself; weights must all be there.
    if [k for k in missing if not k.endswith("position_ids")] or unexpected:
        raise ValueError(f"cross-encoder weights do not fit: {missing} {unexpected}")
    model.eval()  # type: ignore[no-untyped-call]
    return model


def load_cross_encoder(
    path: str | Path | None = None, *, threads: int | None = None
) -> CrossEncoder:
    """The cross-encoder in ``path``, or the shipped one (ValueError when neither is there)."""
    if path is None:
        shipped = shipped_path()
        if shipped is None:
            raise ValueError(f"no {DEFAULT_FILE} in this install (see docs/benchmarks/cache.md)")
        path = shipped
    return CrossEncoder(CrossEncoderFile.read(Path(path)), threads=threads)
