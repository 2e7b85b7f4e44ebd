"""``python -m loadtests.difficulty_proxies``: two additions to the default difficulty model
that were tried for issue 34 and not kept, measured again.

1. Step count (GSM8K's worked solutions as a difficulty proxy): a logistic regression of the
   step count (non-empty lines of the solution before ``####``, capped at 9, scaled to [0, 1])
   on a question's ten cheap features and words and word pairs (``text_terms.py``), fitted on
   GSM8K's 7,473 training questions (``train.jsonl.gz``, free to use); its penalty by the
   correlation on a held-out fifth of them. Its probability ``s`` is added to the text part's
   raw gain with weight ``b``; the figure is the 5-fold cross-validated APGR on the outcome
   training halves of MMLU and GSM8K (the text part refitted per fold, as
   ``loadtests.fit.text_router`` selects it), per benchmark.
2. GSM8K-likeness gate: a logistic regression on the same columns, GSM8K's training
   questions against chat-like prompts (Quora's training split, the team's 350 prompts), whose
   probability ``d`` scales the bundled model's outcome part on free-form prompts (``d *
   outcome + distilled``; multiple-choice prompts unchanged). Figures: APGR of the bundled
   model with and without the gate on the held-out sets (test halves, MT-Bench).

Reads ``../shared/datasets`` (``--datasets``); prints the figures.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import numpy.typing as npt

from gateway.classify.exemplars import read_exemplars
from gateway.classify.features import FEATURE_NAMES
from gateway.classify.fitting import sparse_logistic
from gateway.classify.fitting.logistic import Fitted, sigmoid
from gateway.classify.fitting.routing_quality import router_quality
from gateway.classify.fitting.text_fit import Described, Settings, fit_text, raw_gains, vocabulary
from gateway.classify.text_model import load_text_model
from loadtests.fit.router_weights.cli import training_rows
from loadtests.fit.text_router.cli import EXEMPLARS, quora_questions
from loadtests.kit import routellm as data

Floats = npt.NDArray[np.float64]
WEIGHTS = (0.0, 0.1, 0.2, 0.3, 0.5, 1.0)


class Columns:
    """Standardised features and 0/1 term columns, the vocabulary and scale of a corpus."""

    def __init__(self, corpus: Described, min_df: int) -> None:
        dense = self._dense(corpus)
        self.mean, self.scale = dense.mean(axis=0), dense.std(axis=0)
        self.scale[self.scale < 1e-12] = 1.0
        vocab = vocabulary(corpus.terms, min_df)
        self.index = {term: len(FEATURE_NAMES) + i for i, term in enumerate(vocab)}

    @staticmethod
    def _dense(described: Described) -> Floats:
        rows = np.asarray([f.values() for f in described.features], dtype=np.float64)
        return rows.reshape(len(described.features), len(FEATURE_NAMES))

    def design(self, described: Described) -> sparse_logistic.SparseRows:
        standard = (self._dense(described) - self.mean) / self.scale
        rows = []
        for values, found in zip(standard.tolist(), described.terms, strict=True):
            present = sorted(self.index[t] for t in found & self.index.keys())
            rows.append(([*range(len(FEATURE_NAMES)), *present], values + [1.0] * len(present)))
        return sparse_logistic.SparseRows.of(rows, len(FEATURE_NAMES) + len(self.index))

    def probability(self, fitted: Fitted, described: Described) -> Floats:
        return sigmoid(fitted.bias + self.design(described).dot(fitted.weights))


def steps(solution: str) -> int:
    """The worked solution's steps: its non-empty lines before the ``####`` answer."""
    lines = [line for line in solution.split("\n") if line.strip()]
    return max(1, len([line for line in lines if not line.startswith("####")]))


def step_part(datasets: Path) -> tuple[Columns, Fitted]:
    solved = data.gsm8k_solutions(datasets)
    corpus = Described.of([s.question for s in solved])
    target = (np.minimum([steps(s.solution) for s in solved], 9) - 1) / 8.0
    columns = Columns(corpus, min_df=3)
    x = columns.design(corpus)
    held = np.random.default_rng(1).random(len(solved)) < 0.2
    fit_rows, test_rows = np.flatnonzero(~held), np.flatnonzero(held)
    scores = {}
    for l2 in (3.0, 10.0, 30.0):
        fitted = sparse_logistic.fit(x.take(fit_rows), target[fit_rows], l2=l2)
        z = fitted.bias + x.take(test_rows).dot(fitted.weights)
        scores[l2] = float(np.corrcoef(z, target[test_rows])[0, 1])
        print(f"step count, l2 {l2:g}: held-out correlation {scores[l2]:.3f}", flush=True)
    best = max(scores, key=scores.__getitem__)
    return columns, sparse_logistic.fit(x, target, l2=best)


def step_count_rows(datasets: Path) -> None:
    columns, fitted = step_part(datasets)
    rows, groups = training_rows(datasets)
    described = Described.of([r.prompt for r in rows])
    proxy = columns.probability(fitted, described)
    labels = np.asarray(groups)
    folds = np.random.default_rng(0).permutation(len(rows)) % 5
    raw = np.zeros(len(rows))
    for fold in range(5):
        train = np.flatnonzero(folds != fold).tolist()
        test = np.flatnonzero(folds == fold).tolist()
        model = fit_text(
            [rows[i] for i in train], Settings(60.0, 5), described=described.take(train)
        )
        raw[test] = raw_gains(
            model.model, [rows[i].prompt for i in test], described.take(test).features
        )
    weak = np.asarray([r.weak for r in rows])
    strong = np.asarray([r.strong for r in rows])
    print("| b | " + " | ".join(sorted(set(groups))) + " | mean |\n|---|---|---|---|")
    for b in WEIGHTS:
        score = raw + b * proxy
        found = {}
        for group in sorted(set(groups)):
            per_fold = [
                router_quality(score[m].tolist(), weak[m].tolist(), strong[m].tolist()).apgr
                for fold in range(5)
                if (m := (folds == fold) & (labels == group)).any()
            ]
            found[group] = float(np.mean(per_fold))
        cells = " | ".join(f"{v:.4f}" for v in found.values())
        print(f"| {b:g} | {cells} | {np.mean(list(found.values())):.4f} |", flush=True)
    alone = {
        g: router_quality(proxy[labels == g].tolist(), weak[labels == g].tolist(),
                          strong[labels == g].tolist()).apgr
        for g in sorted(set(groups))
    }  # fmt: skip
    print(
        "step count alone (training rows): " + ", ".join(f"{g} {a:.3f}" for g, a in alone.items())
    )


def gate_rows(datasets: Path) -> None:
    positives = [s.question for s in data.gsm8k_solutions(datasets)]
    negatives = quora_questions(datasets, 24000) + read_exemplars(EXEMPLARS)[0]
    corpus = Described.of(positives + negatives)
    columns = Columns(corpus, min_df=5)
    target = np.r_[np.ones(len(positives)), np.zeros(len(negatives))]
    balance = np.where(target == 1, len(negatives) / len(positives), 1.0)
    gate = sparse_logistic.fit(columns.design(corpus), target, l2=10.0, row_weights=balance)
    model = load_text_model()
    outcome_only = replace(model, distilled=None)
    sets = {
        "MMLU (test half)": data.split(data.mmlu(datasets), "test"),
        "GSM8K (test half)": data.split(data.gsm8k(datasets), "test"),
        "MT-Bench": data.mt_bench(datasets),
    }
    print("| held out | bundled | gated | mean d |\n|---|---|---|---|")
    for name, outcomes in sets.items():
        prompts = [o.prompt for o in outcomes]
        described = Described.of(prompts)
        whole = raw_gains(model, prompts, described.features)
        outcome = raw_gains(outcome_only, prompts, described.features)
        d = columns.probability(gate, described)
        free = np.asarray([kind == "free" for kind in described.formats])
        gated = np.where(free, d * outcome + (whole - outcome), whole)
        weak, strong = [o.weak for o in outcomes], [o.strong for o in outcomes]
        apgr = [router_quality(s.tolist(), weak, strong).apgr for s in (whole, gated)]
        print(f"| {name} | {apgr[0]:.3f} | {apgr[1]:.3f} | {float(d.mean()):.3f} |", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m loadtests.difficulty_proxies", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--datasets", type=Path, default=data.DEFAULT_DATASETS)
    args = parser.parse_args(argv)
    try:
        step_count_rows(args.datasets)
        gate_rows(args.datasets)
    except data.DatasetsMissing as exc:
        print(f"difficulty_proxies: {exc}", file=sys.stderr)
        return 2
    return 0
