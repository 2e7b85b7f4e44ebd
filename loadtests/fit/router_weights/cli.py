"""``python -m loadtests.fit.router_weights``: fit the bundled difficulty model
(``gateway/classify/data/difficulty_model.json``) on public outcomes.

Data (``../shared/datasets``, see ``loadtests/kit/routellm.py``; the run stops with a clear message
when it is absent): the *training* halves of RouteLLM's MMLU and GSM8K outcome tables
(Mixtral-8x7B vs GPT-4, right or wrong). Never a test half, never MT-Bench: those are for
``loadtests.router_quality``.

Method (``gateway/classify/fitting/router_fit.py``): one logistic regression per model over the
MiniLM embedding and the ten cheap features; the L2 penalty is the candidate (``--l2``) with
the best 3-fold cross-validated APGR on the training rows, averaged over the two benchmarks.
The benchmarks are weighted so each counts alike (MMLU has ten times the rows), since
traffic is neither. GSM8K's training questions with worked solutions (no outcomes) were
tried as a guide (the number of solution steps as one more learned direction): the
cross-validated APGR did not move, so they are left out.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from gateway.classify.fitting.router_fit import Labelled, choose_l2, fit_model
from gateway.embedding import SentenceEncoder
from loadtests.kit import routellm as data
from loadtests.kit.embedding_cache import DEFAULT_CACHE, embeddings

OUT = Path(__file__).resolve().parents[3] / "gateway/classify/data/difficulty_model.json"
BENCHMARKS = {"mmlu": data.mmlu, "gsm8k": data.gsm8k}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m loadtests.fit.router_weights", description=__doc__
    )
    parser.add_argument("--datasets", type=Path, default=data.DEFAULT_DATASETS)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="embeddings on disk")
    parser.add_argument("--l2", type=float, nargs="+", default=[100.0, 300.0, 1000.0, 3000.0])
    parser.add_argument("--out", type=Path, default=OUT)
    return parser


def training_rows(datasets: Path) -> tuple[list[Labelled], list[str]]:
    """Both benchmarks' training halves, each weighted to count alike, and their names."""
    rows: list[Labelled] = []
    groups: list[str] = []
    for name, read in BENCHMARKS.items():
        train = data.split(read(datasets), "train")
        rows += [Labelled(o.prompt, o.weak, o.strong, 1000.0 / len(train)) for o in train]
        groups += [name] * len(train)
    return rows, groups


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        rows, groups = training_rows(args.datasets)
    except data.DatasetsMissing as exc:
        print(f"fit.router_weights: {exc}", file=sys.stderr)
        return 2
    vectors = embeddings([r.prompt for r in rows], args.cache, SentenceEncoder)
    l2, means = choose_l2(rows, vectors, args.l2, groups=groups)
    for candidate, apgr in means.items():
        print(f"l2 {candidate:g}: cross-validated APGR {apgr:.3f} (mean of MMLU and GSM8K)")
    about = (
        f"RouteLLM MMLU + GSM8K training halves ({len(rows)} prompts, each benchmark weighted "
        f"alike), l2 {l2:g} (3-fold CV); python -m loadtests.fit.router_weights"
    )
    fitted = fit_model(rows, vectors, l2=l2, about=about)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(fitted.model.to_json(), indent=1) + "\n")
    print(f"wrote {args.out} (l2 {l2:g})")
    return 0
