"""Question pairs for the semantic cache's verifier: public QQP data and the written sets.

QQP (``<datasets>/qqp/qqp_pairs.json.gz``, ``{text_a, text_b, label}``): the split is fixed by
``../shared/datasets/README.md``: test = pairs whose 0-based index is a multiple of 5, train =
the rest. The fit further cuts the train split into fit and calibration parts by a hash of
the pair (``calibration_share``, default 25%), so the threshold is chosen on pairs the
weights never saw. ``paraphrase_mock.json`` (GPTCache, positives only) is for evaluation.
The near-miss sets are JSON lines ``{"a", "b", "label", "kind"}`` written for this project:
``near_miss_train.jsonl`` is fitted, ``near_miss_eval.jsonl`` is only ever evaluated.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

HERE = Path(__file__).parent
NEAR_MISS_TRAIN = HERE / "near_miss_train.jsonl"
NEAR_MISS_EVAL = HERE / "near_miss_eval.jsonl"
# Written for issue 35: more training pairs for the cross-encoder, and a fresh evaluation set.
CROSS_TRAIN = HERE / "cross_train.jsonl"
FRESH_EVAL = HERE / "fresh_eval.jsonl"
# ../shared/datasets seen from the repository root.
DEFAULT_DATASETS = HERE.parent.parent.parent / "shared" / "datasets"

Part = Literal["fit", "calibration", "test"]


class DataMissing(RuntimeError):
    """A dataset file is not where it should be."""


@dataclass(frozen=True, slots=True)
class Pair:
    a: str  # the cached question
    b: str  # the question asked
    label: int  # 1: the answer to a may be served for b
    kind: str = "qqp"


def qqp_path(datasets: Path) -> Path:
    return datasets / "qqp" / "qqp_pairs.json.gz"


def load_qqp(datasets: Path, part: Part, calibration_share: float = 0.25) -> list[Pair]:
    """One part of QQP: ``test`` (index % 5 == 0), or the train split's ``fit`` or
    ``calibration`` share (chosen by a hash of the pair's index, stable across runs)."""
    rows = _read_json(qqp_path(datasets), gz=True)
    out = []
    for index, row in enumerate(rows):
        if _part_of(index, calibration_share) == part:
            out.append(Pair(str(row["text_a"]), str(row["text_b"]), int(row["label"])))
    return out


def _part_of(index: int, calibration_share: float) -> Part:
    if index % 5 == 0:
        return "test"
    digest = hashlib.blake2b(str(index).encode(), digest_size=8).digest()
    draw = int.from_bytes(digest, "big") / 2**64
    return "calibration" if draw < calibration_share else "fit"


def load_paraphrases(datasets: Path) -> list[Pair]:
    """GPTCache's mock paraphrase pairs: positives only (evaluation only)."""
    rows = _read_json(datasets / "qqp" / "paraphrase_mock.json", gz=False)
    return [Pair(str(r["origin"]), str(r["similar"]), 1, "paraphrase") for r in rows]


def load_written(path: Path) -> list[Pair]:
    """A near-miss set: JSON lines ``{"a", "b", "label", "kind"}``."""
    return [Pair(str(r["a"]), str(r["b"]), int(r["label"]), str(r["kind"])) for r in _lines(path)]


def _lines(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if line.strip():
                row = json.loads(line)
                if not isinstance(row, dict):
                    raise ValueError(f"{path}:{number}: not a JSON object")
                yield row


def _read_json(path: Path, *, gz: bool) -> list[dict[str, Any]]:
    if not path.is_file():
        raise DataMissing(
            f"{path} is missing: the public datasets live in ../shared/datasets beside the "
            "repository (see its README); pass --datasets DIR to read them elsewhere"
        )
    raw = gzip.decompress(path.read_bytes()) if gz else path.read_bytes()
    rows = json.loads(raw)
    if not isinstance(rows, list):
        raise ValueError(f"{path}: expected a JSON list")
    return rows


def texts_of(pairs: Sequence[Pair]) -> list[str]:
    """Every distinct text of ``pairs``, in first-seen order."""
    return list(dict.fromkeys(t for p in pairs for t in (p.a, p.b)))


def sample(pairs: Sequence[Pair], n: int | None, seed: int = 0) -> list[Pair]:
    """``n`` pairs drawn without replacement (all of them when ``n`` is None or larger)."""
    if n is None or n >= len(pairs):
        return list(pairs)
    return random.Random(seed).sample(list(pairs), n)


def unseen(pairs: Sequence[Pair], fitted: Sequence[Pair]) -> list[Pair]:
    """``pairs`` less those sharing a text (case-blind) with the ``fitted`` pairs."""
    seen = {t.lower() for p in fitted for t in (p.a, p.b)}
    return [p for p in pairs if p.a.lower() not in seen and p.b.lower() not in seen]
