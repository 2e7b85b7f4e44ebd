"""``python -m loadtests.router_quality``: the gateway's difficulty scores as a strong/weak
router, on held-out public outcomes (RouteLLM's Mixtral-8x7B vs GPT-4 tables).

Benchmarks (``loadtests/kit/routellm.py``): the *test* halves of MMLU and GSM8K (SHA-1 rule) and the
whole of MT-Bench (72 questions after decontamination, never fitted on: a transfer check).
Metrics (``gateway/classify/fitting/routing_quality.py``): APGR, CPT(50%), CPT(80%), and the
share of strong calls needed for 95% of the strong model's quality (the form of RouteLLM's
headline claims), and for the scores the gateway routes on, the share its default split
(``routing.auto.large_share`` 0.3, calibrated on the training prompts) sends to the large pool.
Routers, each scoring the prompt as one user message, as the gateway does:

- ``random``: every prompt scored the same (the expectation of random routing);
- ``heuristic``: the cue-word logistic score (``classify/difficulty.py``), what the gateway
  uses with embeddings off;
- ``kNN vote``: the vote of the 7 nearest exemplars of ``policies/exemplars/difficulty.jsonl``
  (``classify/knn.py``), and ``heuristic + kNN`` blended as ``classify.knn`` does (0.3);
- ``learned model``: the bundled difficulty model (``classify/model.py``), the ranked score
  the gateway routes on with ``classify.model`` on.

Embeddings come from the gateway's MiniLM, cached on disk (``loadtests/kit/embedding_cache.py``;
the first run embeds ~8k prompts). Prints a table per benchmark, and RouteLLM's published
headline beside; writes ``summary.json`` under ``--out`` (default ``results/out/`` here).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from gateway.classify.difficulty import score_difficulty
from gateway.classify.exemplars import read_exemplars
from gateway.classify.features import Features
from gateway.classify.fitting.router_fit import prompt_features
from gateway.classify.fitting.routing_quality import GapCurve
from gateway.classify.knn import KnnVote
from gateway.classify.model import DifficultyModel, load_model
from gateway.classify.split import split_threshold
from gateway.embedding import SentenceEncoder, Vectors
from loadtests.kit import routellm as data
from loadtests.kit.embedding_cache import DEFAULT_CACHE, embeddings

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]  # the repository
EXEMPLARS = ROOT / "policies/exemplars/difficulty.jsonl"
# RouteLLM's project page: "cost reductions of over 85% on MT Bench, 45% on MMLU, and 35% on
# GSM8K as compared to using only GPT-4, while still achieving 95% of GPT-4's performance"
# (sky.cs.berkeley.edu/project/routellm; whole benchmarks, their best routers, trained on
# Chatbot Arena preferences with augmentation). As strong-call shares at 95% of GPT-4:
ROUTELLM_CALLS_AT_95 = {"mmlu": "<= 55%", "gsm8k": "<= 65%", "mt_bench": "<= 15%"}


@dataclass(frozen=True, slots=True)
class Row:
    router: str
    apgr: float
    cpt50: float
    cpt80: float
    calls_at_95: float  # strong-call share reaching 95% of the strong model's quality
    split_share: float | None  # share the default split (large_share 0.3) sends large


@dataclass(frozen=True, slots=True)
class Bench:
    name: str
    outcomes: list[data.Outcome]
    vectors: Vectors


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m loadtests.router_quality", description=__doc__)
    parser.add_argument("--datasets", type=Path, default=data.DEFAULT_DATASETS)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="embeddings on disk")
    parser.add_argument("--weights", type=Path, help="model file (default: the bundled one)")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "out")
    return parser


def calls_at(curve: GapCurve, weak: float, strong: float, share_of_strong: float) -> float:
    """Least strong-call share whose quality reaches ``share_of_strong`` of the strong model's
    (``weak``, ``strong``: mean quality of each model alone)."""
    target = (share_of_strong * strong - weak) / (strong - weak)
    return curve.cpt(target) if target > 0 else 0.0


def evaluate(
    name: str,
    scores: Sequence[float],
    outcomes: Sequence[data.Outcome],
    threshold: float | None = None,
) -> Row:
    weak = [o.weak for o in outcomes]
    strong = [o.strong for o in outcomes]
    curve = GapCurve.of(scores, weak, strong)
    at95 = calls_at(curve, float(np.mean(weak)), float(np.mean(strong)), 0.95)
    share = None if threshold is None else float(np.mean(np.asarray(scores) >= threshold))
    return Row(name, curve.apgr(), curve.cpt(0.5), curve.cpt(0.8), at95, share)


def routers(model: DifficultyModel, knn: KnnVote) -> dict[str, Callable[[Bench], list[float]]]:
    def heuristic(bench: Bench) -> list[float]:
        return [score_difficulty(f).score for f in _features(bench)]

    def vote(bench: Bench) -> list[float]:
        return [knn.vote(v) for v in bench.vectors]

    def blend(bench: Bench) -> list[float]:
        return [knn.blend(h, v) for h, v in zip(heuristic(bench), bench.vectors, strict=True)]

    def learned(bench: Bench) -> list[float]:
        features = _features(bench)
        return [
            model.score(f, v, threshold=0.5).score
            for f, v in zip(features, bench.vectors, strict=True)
        ]

    return {
        "random": lambda bench: [0.5] * len(bench.outcomes),
        "heuristic": heuristic,
        "kNN vote": vote,
        "heuristic + kNN (w 0.3)": blend,
        "learned model": learned,
    }


def _features(bench: Bench) -> list[Features]:
    return prompt_features([o.prompt for o in bench.outcomes])


def _table(bench: str, rows: Sequence[Row]) -> str:
    lines = [
        "| router | APGR | CPT(50%) | CPT(80%) | calls for 95% of GPT-4 | large, default split |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        split = "" if r.split_share is None else f"{r.split_share:.1%}"
        lines.append(
            f"| {r.router} | {r.apgr:.3f} | {r.cpt50:.1%} | {r.cpt80:.1%} | {r.calls_at_95:.1%} "
            f"| {split} |"
        )
    lines.append(f"| RouteLLM (published headline) | | | | {ROUTELLM_CALLS_AT_95[bench]} | |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        sets = {
            "mmlu": data.split(data.mmlu(args.datasets), "test"),
            "gsm8k": data.split(data.gsm8k(args.datasets), "test"),
            "mt_bench": data.mt_bench(args.datasets),
        }
    except data.DatasetsMissing as exc:
        print(f"router_quality: {exc}", file=sys.stderr)
        return 2
    prompts, labels = read_exemplars(EXEMPLARS)
    texts = [o.prompt for outcomes in sets.values() for o in outcomes] + prompts
    vectors = embeddings(texts, args.cache, SentenceEncoder)
    knn = KnnVote.build(vectors[-len(prompts) :], labels)
    model = load_model(args.weights)
    scorers = routers(model, knn)
    # The default split (large_share 0.3): its threshold for each score the gateway routes on.
    thresholds = {
        "heuristic": split_threshold(0.3, model, ranked=False),
        "learned model": split_threshold(0.3, model, ranked=True),
    }
    summary: dict[str, list[dict[str, object]]] = {}
    start = 0
    for name, outcomes in sets.items():
        bench = Bench(name, outcomes, vectors[start : start + len(outcomes)])
        start += len(outcomes)
        rows = [
            evaluate(router, score(bench), outcomes, thresholds.get(router))
            for router, score in scorers.items()
        ]
        summary[name] = [asdict(r) for r in rows]
        print(f"{name}: {len(outcomes)} prompts")
        print(_table(name, rows), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2))
    return 0
