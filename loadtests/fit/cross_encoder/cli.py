"""Fit the cross-encoder verifier, write its weights file (``cache/judgement/cross_encoder.npz``).

``python -m loadtests.fit.cross_encoder [--datasets ../shared/datasets]``

Data: the QQP train split only (``../shared/datasets/qqp``, split rule in its README). The
weights are fitted on its fit part plus the written training pairs
(``loadtests/kit/near_miss_train.jsonl`` and ``cross_train.jsonl``), see
``fine_tune.py``; the bound curves are measured on its calibration part (all
16,409 pairs, natural label mix), which the weights never saw, with the quantised model
exactly as the gateway runs it: a pair below the cosine floor (``--min-cosine``, all-MiniLM
embeddings) or, for the guarded curve, refused by the guard counts as refused. Nothing of
the test split is read.

The fit is resumable: it checkpoints to ``.cache/cache-quality/cross-encoder.ckpt`` and stops
after ``--max-minutes`` (exit 3: run the same command again to go on). With the defaults,
1,000 steps of 32 pairs on one torch thread: about 45 minutes on two shared cores. Then the
calibration embeds the calibration part (cached in ``.cache/cache-quality/``) and scores it.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from pathlib import Path

import numpy as np

from gateway.cache.judgement.cross_encoder import (
    DEFAULT_FILE,
    CrossEncoder,
    CrossEncoderFile,
    quantise,
)
from gateway.cache.judgement.false_hit_bound import bound_curve
from gateway.cache.judgement.guard import refusal
from gateway.embedding import SentenceEncoder
from loadtests.fit.cross_encoder.fine_tune import CrossFitSettings, fit, training_stream
from loadtests.kit.cache_pairs import (
    CROSS_TRAIN,
    DEFAULT_DATASETS,
    NEAR_MISS_TRAIN,
    DataMissing,
    Pair,
    load_qqp,
    load_written,
    texts_of,
)
from loadtests.kit.embedding_store import DEFAULT_DIR, EmbeddingStore

OUT = Path(__file__).parent.parent / "gateway" / "cache" / DEFAULT_FILE
MIN_COSINE = 0.7

log = logging.getLogger(__name__)


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    args = _parser().parse_args(argv)
    try:
        qqp = load_qqp(args.datasets, "fit")
        calibration = load_qqp(args.datasets, "calibration")
    except DataMissing as exc:
        print(f"fit-cross-encoder: {exc}", file=sys.stderr)
        return 2
    import torch

    torch.set_num_threads(args.threads)
    written = [*load_written(NEAR_MISS_TRAIN), *load_written(CROSS_TRAIN)]
    settings = CrossFitSettings(
        layers=args.layers,
        steps=args.steps,
        seed=args.seed,
        lr=args.lr,
        init=None if args.init is None else str(args.init),
    )
    args.checkpoint.parent.mkdir(parents=True, exist_ok=True)
    model = fit(
        training_stream(qqp, written, settings),
        settings,
        args.checkpoint,
        max_minutes=args.max_minutes,
    )
    if model is None:
        print("fit-cross-encoder: stopped at --max-minutes; run it again to resume")
        return 3
    head = model.head_vector()
    meta = {
        **settings.as_meta(),
        "qqp_fit_pairs": len(qqp),
        "written_pairs": len(written),
        "qqp_calibration_pairs": len(calibration),
        "calibration_mix": "natural",
        "min_cosine": args.min_cosine,
    }
    draft = CrossEncoderFile(
        tensors=quantise(model.encoder_state()),
        head=head,
        config=model.config,
        max_tokens=settings.max_tokens,
        curve=bound_curve(np.zeros(1), np.zeros(1)),
        curve_no_guard=bound_curve(np.zeros(1), np.zeros(1)),
        meta=meta,
    )
    store = EmbeddingStore(SentenceEncoder(threads=args.threads), args.embeddings)
    scores, vetoed = calibration_scores(CrossEncoder(draft), calibration, store, args.min_cosine)
    labels = np.array([p.label for p in calibration], np.float64)
    final = CrossEncoderFile(
        tensors=draft.tensors,
        head=head,
        config=draft.config,
        max_tokens=draft.max_tokens,
        curve=bound_curve(np.where(vetoed, 0.0, scores), labels),
        curve_no_guard=bound_curve(scores, labels),
        meta=meta,
    )
    final.save(args.out)
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.1f} MB)")
    for rate in (0.01, 0.02, 0.05, 0.1):
        t = final.curve.threshold_for(rate)
        precision, recall, _hits = final.curve.at(t)
        print(f"  rate {rate}: threshold {t:.4f}, precision {precision:.3f}, recall {recall:.3f}")
    return 0


def calibration_scores(
    model: CrossEncoder, pairs: list[Pair], store: EmbeddingStore, min_cosine: float
) -> tuple[np.ndarray, np.ndarray]:
    """The model's probability for each pair (0 below ``min_cosine``) and the guard's vetoes."""
    texts = texts_of(pairs)
    vectors_of = dict(zip(texts, store.vectors(texts), strict=True))
    cosines = np.array([float(np.dot(vectors_of[p.a], vectors_of[p.b])) for p in pairs])
    scores = np.zeros(len(pairs))
    rows = np.flatnonzero(cosines >= min_cosine)
    started = time.monotonic()
    for i in range(0, len(rows), 64):
        chunk = rows[i : i + 64]
        scores[chunk] = model.score([(pairs[j].a, pairs[j].b) for j in chunk])
        if (i // 64) % 40 == 0:
            log.info(
                "scored %d of %d (%.0f s)", i + len(chunk), len(rows), time.monotonic() - started
            )
    vetoed = np.array([refusal(p.a, p.b) is not None for p in pairs])
    return scores, vetoed


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", type=Path, default=DEFAULT_DATASETS)
    parser.add_argument("--steps", type=int, default=CrossFitSettings.steps)
    parser.add_argument("--layers", type=int, default=CrossFitSettings.layers)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lr", type=float, default=CrossFitSettings.lr)
    parser.add_argument("--init", type=Path, default=None, help="go on from this checkpoint")
    parser.add_argument("--min-cosine", type=float, default=MIN_COSINE)
    parser.add_argument("--max-minutes", type=float, default=40.0)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1: see README)")
    parser.add_argument("--checkpoint", type=Path, default=DEFAULT_DIR / "cross-encoder.ckpt")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--embeddings", type=Path, default=DEFAULT_DIR / "all-MiniLM-L6-v2.npz")
    return parser
