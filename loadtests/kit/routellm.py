"""RouteLLM's public outcome tables (``../shared/datasets/routellm``), read with the fixed split.

What each benchmark gives per prompt: the weak model's quality (Mixtral-8x7B-Instruct) and
the strong model's (GPT-4-1106), 1/0 for a right/wrong answer on MMLU and GSM8K, and the
GPT-4 judge's 1-10 score averaged over both turns on MT-Bench (whose turn-1 question is what
a router sees, as in RouteLLM's evaluation). Prompts listed in each folder's
``contaminated_prompts.jsonl`` are dropped.

Split (``../shared/datasets/README.md``): a prompt is in the test half when the SHA-1 of its
UTF-8 text, read as a hexadecimal number, is odd; train otherwise. MT-Bench is test only:
it checks transfer, nothing is ever fitted on it. GSM8K's ``train.jsonl.gz`` (the GSM8K
training questions with worked solutions, no model outcomes) may be used freely.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import json
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

ROOT = Path(__file__).resolve().parents[2]  # the repository
DEFAULT_DATASETS = ROOT.parent / "shared" / "datasets"
WEAK = "mistralai/Mixtral-8x7B-Instruct-v0.1"
STRONG = "gpt-4-1106-preview"

Half = Literal["train", "test"]


class DatasetsMissing(RuntimeError):
    """The public datasets are not where they were looked for."""


@dataclass(frozen=True, slots=True)
class Outcome:
    prompt: str
    weak: float
    strong: float


@dataclass(frozen=True, slots=True)
class Solved:
    """A GSM8K training question and its worked solution."""

    question: str
    solution: str

    @property
    def steps(self) -> int:
        """Lines of the solution before its ``#### answer`` line."""
        return sum(1 for line in self.solution.splitlines() if line and not line.startswith("####"))


def in_test_half(prompt: str) -> bool:
    return int(hashlib.sha1(prompt.encode("utf-8")).hexdigest(), 16) % 2 == 1


def split(outcomes: list[Outcome], half: Half) -> list[Outcome]:
    test = half == "test"
    return [o for o in outcomes if in_test_half(o.prompt) == test]


def routellm_dir(datasets: Path) -> Path:
    folder = datasets / "routellm"
    if not (folder / "mmlu").is_dir():
        raise DatasetsMissing(
            f"RouteLLM's outcome tables are not at {folder} (expected mmlu/, gsm8k/, mt_bench/ "
            "as described in ../shared/datasets/README.md); pass --datasets DIR"
        )
    return folder


def _contaminated(folder: Path) -> set[str]:
    path = folder / "contaminated_prompts.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    return {json.loads(line)["eval_prompt"] for line in lines if line.strip()}


def _csv_outcomes(path: Path, dropped: set[str]) -> Iterator[Outcome]:
    with path.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            prompt = row["prompt"]
            if prompt not in dropped:
                yield Outcome(prompt, float(row[WEAK] == "True"), float(row[STRONG] == "True"))


def mmlu(datasets: Path) -> list[Outcome]:
    folder = routellm_dir(datasets) / "mmlu"
    dropped = _contaminated(folder)
    return [o for path in sorted(folder.glob("mmlu_*.csv")) for o in _csv_outcomes(path, dropped)]


def gsm8k(datasets: Path) -> list[Outcome]:
    folder = routellm_dir(datasets) / "gsm8k"
    return list(_csv_outcomes(folder / "gsm8k_responses.csv", _contaminated(folder)))


def gsm8k_solutions(datasets: Path) -> list[Solved]:
    path = routellm_dir(datasets) / "gsm8k" / "train.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    return [Solved(row["question"], row["answer"]) for row in rows]


def mt_bench(datasets: Path) -> list[Outcome]:
    """The turn-1 question of every uncontaminated MT-Bench item, with both models' judge
    scores averaged over its two turns."""
    folder = routellm_dir(datasets) / "mt_bench"
    dropped = _contaminated(folder)
    scores: dict[tuple[int, str], list[float]] = defaultdict(list)
    for line in (folder / "judgements.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            scores[(row["question_id"], row["model"])].append(float(row["score"]))
    out = []
    for line in (folder / "question.jsonl").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        question = json.loads(line)
        turns = question["turns"]
        if any(turn in dropped for turn in turns):
            continue
        weak, strong = (
            scores[(question["question_id"], WEAK)],
            scores[(question["question_id"], STRONG)],
        )
        out.append(Outcome(turns[0], sum(weak) / len(weak), sum(strong) / len(strong)))
    return out
