"""Sentence embeddings of many texts, kept on disk between runs.

Embedding the QQP train split takes minutes on two shared cores; the fit and the benchmark
read the vectors from ``<repo>/.cache/cache-quality/<model>.npz`` (git-ignored) and embed
only the texts not there yet, in batches, saving as they go.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from gateway.embedding import Encoder, Vectors

log = logging.getLogger(__name__)

DEFAULT_DIR = Path(__file__).parent.parent.parent / ".cache" / "cache-quality"


class EmbeddingStore:
    """Text -> unit vector, backed by one ``.npz`` file per model."""

    def __init__(self, encoder: Encoder, path: Path) -> None:
        self._encoder = encoder
        self._path = path
        self._rows: dict[str, int] = {}
        self._chunks: list[Vectors] = [np.zeros((0, encoder.dim), np.float32)]
        if path.is_file():
            with np.load(path, allow_pickle=False) as data:
                texts = json.loads(bytes(data["texts"]).decode())
                self._chunks = [np.asarray(data["vectors"], np.float32)]
            self._rows = {t: i for i, t in enumerate(texts)}

    def vectors(self, texts: Sequence[str], *, batch: int = 256) -> Vectors:
        """The vectors of ``texts`` (rows in order), embedding the ones not stored yet."""
        # Texts of like length batch together: a batch is padded to its longest text.
        missing = sorted((t for t in dict.fromkeys(texts) if t not in self._rows), key=len)
        started = time.monotonic()
        for i in range(0, len(missing), batch):
            chunk = missing[i : i + batch]
            self._append(chunk, self._encoder.encode(chunk))
            if (i // batch) % 20 == 19 or i + batch >= len(missing):
                self._save()
                log.info(
                    "embedded %d of %d new texts (%.0f s)",
                    min(i + batch, len(missing)),
                    len(missing),
                    time.monotonic() - started,
                )
        rows = np.fromiter((self._rows[t] for t in texts), dtype=np.int64, count=len(texts))
        out: Vectors = self._matrix()[rows]
        return out

    def _matrix(self) -> Vectors:
        if len(self._chunks) > 1:
            self._chunks = [np.concatenate(self._chunks)]
        return self._chunks[0]

    def _append(self, texts: list[str], vectors: Vectors) -> None:
        start = len(self._rows)
        self._rows.update((t, start + i) for i, t in enumerate(texts))
        self._chunks.append(vectors.astype(np.float32))

    def _save(self) -> None:
        self._path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self._path.with_suffix(".tmp.npz")
        texts = np.frombuffer(json.dumps(list(self._rows)).encode(), dtype=np.uint8)
        np.savez(tmp, texts=texts, vectors=self._matrix())
        tmp.replace(self._path)
