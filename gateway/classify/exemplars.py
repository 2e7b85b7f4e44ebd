"""Load the classifier's labelled exemplars and embed them with the cache's embedder.

The file holds JSON lines ``{"prompt": ..., "label": "easy" | "hard"}``. A missing or
malformed file is logged and leaves the kNN vote off; the rest of the gateway runs on.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import numpy as np

from gateway.classify.knn import KnnVote
from gateway.embedding import BatcherClosed, MicroBatcher
from gateway.schema import Knn

log = logging.getLogger(__name__)


def read_exemplars(path: Path) -> tuple[list[str], list[int]]:
    prompts: list[str] = []
    labels: list[int] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        label = row["label"]
        if label not in ("easy", "hard"):
            raise ValueError(f"label must be easy or hard, not {label!r}")
        prompts.append(str(row["prompt"]))
        labels.append(1 if label == "hard" else 0)
    if not prompts or len(set(labels)) < 2:
        raise ValueError("need exemplars of both labels")
    return prompts, labels


async def load_knn(settings: Knn, batcher: MicroBatcher) -> KnnVote | None:
    path = Path(settings.exemplars)
    try:
        prompts, labels = await asyncio.to_thread(read_exemplars, path)
        vectors = await asyncio.gather(*(batcher.embed(p) for p in prompts))
    except (OSError, ValueError, KeyError, BatcherClosed) as exc:
        log.error("classify.knn: exemplars %s not usable (%s); the kNN vote stays off", path, exc)
        return None
    log.info("classify.knn: %d exemplars embedded", len(prompts))
    return KnnVote.build(np.stack(vectors), labels, k=settings.k, weight=settings.weight)
