"""``python -m loadtests.fit.text_router``: fit the bundled default difficulty model
(``gateway/classify/data/difficulty_text_model.json.gz``, ``classify/text_model.py``) on
public data.

Data (``../shared/datasets``; the run stops with a clear message when it is absent):

- outcomes: the *training* halves of RouteLLM's MMLU and GSM8K tables (Mixtral-8x7B vs
  GPT-4, right or wrong; SHA-1 rule of ``loadtests/kit/routellm.py``), each benchmark
  weighted alike.
  Never a test half, never MT-Bench: those are for ``loadtests.router_quality``;
- a corpus without outcomes, for the distilled part: those training prompts, GSM8K's 7,473
  training questions (``train.jsonl.gz``), the first ``--chat-questions`` distinct questions
  of the training split of Quora Question Pairs (pairs whose index is not a multiple of 5,
  ``qqp/qqp_pairs.json.gz``) and the team's 350 labelled prompts
  (``policies/exemplars/difficulty.jsonl``): chat-like text, to learn words the outcome
  tables never show.

Method:

1. Text part (``classify/fitting/text_fit.py``): per-format outcome regressions over the ten cheap
   features and word/word-pair terms; its L2 penalty and minimum document frequency are the
   candidates (``--l2``, ``--min-df``) with the best 5-fold cross-validated APGR on the
   training rows (mean of MMLU's and GSM8K's).
2. Embedding part (``classify/fitting/router_fit.py``, skipped with ``--no-embedding``): the outcome
   regressions over the MiniLM embedding and the ten features, penalty by 3-fold
   cross-validated APGR (``--embedding-l2``).
3. Distilled part (``classify/fitting/distill.py``): the embedding part's probabilities on the
   corpus, imitated from words; the penalty, the terms' minimum document frequency and the
   weight of a chat-like prompt in the fit (``--imitation-l2``, ``--imitation-min-df``,
   ``--chat-weight``) with the best fidelity (Spearman) on a held-out fifth of the corpus's
   chat-like prompts (Quora and the team's; the fifth is fixed by each prompt's SHA-1), then
   refitted on the whole corpus.
4. Scales: the raw gains (text + distilled; the embedding part's) on the training prompts.

Embeddings come from the gateway's MiniLM, cached on disk (``loadtests/kit/embedding_cache.py``);
the first run embeds every corpus text: ~15 minutes for the 39,365 texts of 24,000 Quora
questions on two shared cores (measured 2026-11-27: 34,245 of them in 788 s at load average
~3.8), and 5 to 7 minutes per 8,000 further Quora questions (320 s and 425 s, measured).
Prints each candidate's score; writes the model (``--out``).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from gateway.classify.exemplars import read_exemplars
from gateway.classify.fitting import distill, logistic
from gateway.classify.fitting.router_fit import Labelled, choose_l2, columns, fit_model
from gateway.classify.fitting.text_fit import Described, Settings, cross_validate, fit_text
from gateway.classify.model import quantiles
from gateway.classify.text_model import EmbeddingPart, TextModel, write_model
from gateway.embedding import SentenceEncoder
from loadtests.fit.router_weights.cli import training_rows
from loadtests.kit import routellm as data
from loadtests.kit.embedding_cache import DEFAULT_CACHE, embeddings

ROOT = Path(__file__).resolve().parents[3]  # the repository
OUT = ROOT / "gateway/classify/data/difficulty_text_model.json.gz"
EXEMPLARS = ROOT / "policies/exemplars/difficulty.jsonl"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m loadtests.fit.text_router", description=__doc__
    )
    parser.add_argument("--datasets", type=Path, default=data.DEFAULT_DATASETS)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="embeddings on disk")
    parser.add_argument("--l2", type=float, nargs="+", default=[30.0, 60.0, 120.0])
    parser.add_argument("--min-df", type=int, nargs="+", default=[5])
    parser.add_argument("--embedding-l2", type=float, nargs="+", default=[300.0, 1000.0, 3000.0])
    parser.add_argument("--imitation-l2", type=float, nargs="+", default=[1.0, 3.0])
    parser.add_argument(
        "--imitation-min-df", type=int, nargs="+", default=[5], help="distilled part's terms"
    )
    parser.add_argument(
        "--chat-weight",
        type=float,
        nargs="+",
        default=[1.0],
        help="weight of a chat-like prompt in the distilled part's fit (others weigh 1)",
    )
    parser.add_argument("--chat-questions", type=int, default=24000)
    parser.add_argument("--no-embedding", action="store_true", help="the text part alone")
    parser.add_argument("--out", type=Path, default=OUT)
    return parser


def quora_questions(datasets: Path, count: int) -> list[str]:
    """The first ``count`` distinct questions of QQP's training split."""
    path = datasets / "qqp" / "qqp_pairs.json.gz"
    if not path.exists():
        raise data.DatasetsMissing(f"Quora Question Pairs are not at {path}; pass --datasets DIR")
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        pairs = json.load(handle)
    seen: dict[str, None] = {}
    for index, pair in enumerate(pairs):
        if index % 5 == 0:  # the test split
            continue
        seen.update(dict.fromkeys((pair["text_a"], pair["text_b"])))
        if len(seen) >= count:
            break
    return list(seen)[:count]


def held_out(prompt: str) -> bool:
    """Whether a chat-like prompt is in the fifth held out to choose the distilled part by
    (by its SHA-1, so the same prompt is held out whatever the corpus around it)."""
    return int(hashlib.sha1(prompt.encode("utf-8")).hexdigest(), 16) % 5 == 0


@dataclass(frozen=True, slots=True)
class Imitating:
    """One candidate setting of the distilled part's fit."""

    l2: float
    min_df: int
    chat_weight: float

    def label(self) -> str:
        return f"l2 {self.l2:g}, min_df {self.min_df}, chat weight {self.chat_weight:g}"

    def fit(
        self, described: Described, targets: npt.NDArray[np.float64], chatty: npt.NDArray[np.bool_]
    ) -> distill.Imitation:
        weights = np.where(chatty, self.chat_weight, 1.0)
        return distill.fit_imitation(
            described.features,
            described.terms,
            targets,
            l2=self.l2,
            min_df=self.min_df,
            row_weights=weights,
        )


def fit_text_part(rows: list[Labelled], groups: list[str], args: argparse.Namespace) -> TextModel:
    candidates = [Settings(l2, min_df) for l2 in args.l2 for min_df in args.min_df]
    scores = cross_validate(rows, candidates, groups=groups)
    for settings, score in scores.items():
        parts = ", ".join(f"{group} {apgr:.3f}" for group, apgr in sorted(score.groups.items()))
        print(f"text part, {settings.label()}: cross-validated APGR {score.mean:.3f} ({parts})")
    best = max(scores, key=lambda s: scores[s].mean)
    print(f"text part: {best.label()}", flush=True)
    about = (
        f"RouteLLM MMLU + GSM8K training halves ({len(rows)} prompts, each benchmark weighted "
        f"alike; Mixtral-8x7B vs GPT-4), text part {best.label()}; "
        "python -m loadtests.fit.text_router"
    )
    return fit_text(rows, best, about=about).model


def with_embedding(
    text: TextModel, rows: list[Labelled], groups: list[str], args: argparse.Namespace
) -> TextModel:
    """The text model with its distilled and embedding parts, and their scales."""
    prompts = [r.prompt for r in rows]
    solved = [s.question for s in data.gsm8k_solutions(args.datasets)]
    chat = quora_questions(args.datasets, args.chat_questions) + read_exemplars(EXEMPLARS)[0]
    corpus = list(dict.fromkeys(prompts + solved + chat))
    vectors = embeddings(corpus, args.cache, SentenceEncoder)
    train_vectors = embeddings(prompts, args.cache, SentenceEncoder)  # stored by now
    l2, means = choose_l2(rows, train_vectors, args.embedding_l2, groups=groups)
    for penalty, apgr in means.items():
        print(f"embedding part, l2 {penalty:g}: cross-validated APGR {apgr:.3f}")
    teacher = fit_model(rows, train_vectors, l2=l2).model
    described = Described.of(corpus)
    x = columns(vectors, described.features)
    targets = np.column_stack(
        [
            logistic.sigmoid(side.bias + x @ np.r_[side.embedding, side.features])
            for side in (teacher.large, teacher.small)
        ]
    )
    chat_set = set(chat)
    chatty = np.asarray([p in chat_set for p in corpus])
    held = chatty & np.asarray([held_out(p) for p in corpus])
    fit_rows, test_rows = np.flatnonzero(~held).tolist(), np.flatnonzero(held).tolist()
    candidates = [
        Imitating(l2, min_df, weight)
        for l2 in args.imitation_l2
        for min_df in args.imitation_min_df
        for weight in args.chat_weight
    ]
    fidelities = {}
    for candidate in candidates:
        part = described.take(fit_rows)
        imitation = candidate.fit(part, targets[fit_rows], chatty[fit_rows])
        test = described.take(test_rows)
        gains = imitation.gains(test.features, test.terms)
        fidelities[candidate] = distill.fidelity(gains, targets[test_rows])
        print(f"distilled part, {candidate.label()}: fidelity {fidelities[candidate]:.3f} (chat)")
    best = max(fidelities, key=fidelities.__getitem__)
    imitation = best.fit(described, targets, chatty)
    model = distill.merge(text, imitation)
    features = Described.of(prompts).features
    cheap = [model.raw(p, f) for p, f in zip(prompts, features, strict=True)]
    # With a vector the embedding part decides alone: its scale is its own gains.
    embedding = EmbeddingPart(teacher.large, teacher.small, teacher.quantiles)
    about = (
        f"{text.about}; embedding part l2 {l2:g} (3-fold CV); distilled part {best.label()} on "
        f"{len(corpus)} prompts ({len(chat)} chat-like)"
    )
    return TextModel(
        model.vocabulary,
        model.formats,
        quantiles(cheap),
        model.heuristic_quantiles,
        model.distilled,
        embedding,
        about,
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        rows, groups = training_rows(args.datasets)
        if not args.no_embedding:
            data.gsm8k_solutions(args.datasets)  # present before an hour of fitting
            quora_questions(args.datasets, 1)
    except data.DatasetsMissing as exc:
        print(f"fit.text_router: {exc}", file=sys.stderr)
        return 2
    model = fit_text_part(rows, groups, args)
    if not args.no_embedding:
        model = with_embedding(model, rows, groups, args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_model(model, args.out)
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes, {len(model.vocabulary)} terms)")
    return 0
