"""Sentence embeddings of benchmark texts, kept on disk between runs.

Embedding the ~23k RouteLLM prompts takes the bundled MiniLM about 10 to 30 minutes on this
2-core machine, so each text's vector is stored under the SHA-1 of its UTF-8 text in one
``.npz`` file (``<repo>/.cache/embeddings.npz`` by default, git-ignored) and only texts not
seen before are encoded, shortest first (a batch is padded to its longest text). The encoder is
the gateway's own (``SentenceEncoder``, offline), loaded only when something is missing.
"""

from __future__ import annotations

import hashlib
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from gateway.embedding import Encoder, Vectors

DEFAULT_CACHE = Path(__file__).resolve().parents[2] / ".cache" / "embeddings.npz"
BATCH = 64


def text_key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def load(path: Path) -> dict[str, Vectors]:
    if not path.exists():
        return {}
    with np.load(path) as data:
        return dict(zip(data["keys"].tolist(), data["vectors"], strict=True))


def save(path: Path, vectors: dict[str, Vectors]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    keys = np.asarray(list(vectors))
    stacked = np.stack(list(vectors.values())).astype(np.float32)
    partial = path.with_suffix(".partial.npz")
    np.savez(partial, keys=keys, vectors=stacked)
    partial.replace(path)


def embeddings(texts: Sequence[str], path: Path, encoder: Callable[[], Encoder]) -> Vectors:
    """The vectors of ``texts`` in order, encoding (and storing) only the missing ones."""
    known = load(path)
    # Texts of like length batch together: a batch is padded to its longest text.
    missing = sorted(
        {text_key(t): t for t in texts if text_key(t) not in known}.items(),
        key=lambda item: (len(item[1]), item[0]),
    )
    if missing:
        model = encoder()
        started = time.perf_counter()
        for start in range(0, len(missing), BATCH):
            chunk = missing[start : start + BATCH]
            for (key, _), vector in zip(chunk, model.encode([t for _, t in chunk]), strict=True):
                known[key] = vector
            if (start // BATCH) % 20 == 19 or start + BATCH >= len(missing):
                done = min(start + BATCH, len(missing))
                elapsed = time.perf_counter() - started
                print(f"embedded {done}/{len(missing)} ({elapsed:.0f} s)", file=sys.stderr)
                save(path, known)  # a stopped run keeps what it did
    return np.stack([known[text_key(t)] for t in texts]).astype(np.float32)
