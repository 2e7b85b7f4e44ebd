"""Reading RouteLLM's outcome tables: the SHA-1 split, decontamination, MT-Bench averages."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest

from loadtests.kit import routellm as data

HEADER = f"prompt,{data.WEAK},{data.STRONG}\n"


def _odd(prompt: str) -> bool:
    return int(hashlib.sha1(prompt.encode()).hexdigest()[-1], 16) % 2 == 1


def in_test_half(text: str) -> str:
    """``text``, padded with spaces if need be, so that it falls in the test half."""
    return next(text + " " * n for n in range(64) if _odd(text + " " * n))


MATH = in_test_half("What is 2+2? A. 3 B. 4 Answer:")
EGGS = in_test_half("How many eggs?")
LEGS = in_test_half("How many legs?")


def datasets(root: Path) -> Path:
    """A stand-in for ../shared/datasets with a few rows of each table."""
    folder = root / "routellm"
    for name in ("mmlu", "gsm8k", "mt_bench"):
        (folder / name).mkdir(parents=True)
    (folder / "mmlu" / "mmlu_algebra.csv").write_text(
        HEADER + f'"{MATH}",False,True\n"leaked",True,True\n'
    )
    (folder / "mmlu" / "contaminated_prompts.jsonl").write_text('{"eval_prompt": "leaked"}\n')
    (folder / "gsm8k" / "gsm8k_responses.csv").write_text(
        HEADER + f'"{EGGS}",True,True\n"{LEGS}",False,True\n'
    )
    (folder / "gsm8k" / "contaminated_prompts.jsonl").write_text("")
    with gzip.open(folder / "gsm8k" / "train.jsonl.gz", "wt") as handle:
        handle.write(json.dumps({"question": "q", "answer": "a = 1\nb = 2\n#### 2"}) + "\n")
    questions = [
        {"question_id": 81, "turns": ["Write a poem.", "Shorter."]},
        {"question_id": 82, "turns": ["Leaked one.", "Again."]},
    ]
    (folder / "mt_bench" / "question.jsonl").write_text(
        "".join(json.dumps(q) + "\n" for q in questions)
    )
    (folder / "mt_bench" / "contaminated_prompts.jsonl").write_text(
        '{"eval_prompt": "Leaked one."}\n'
    )
    judgements = [
        {"question_id": 81, "model": model, "turn": turn, "score": score}
        for model, scores in ((data.WEAK, (6, 8)), (data.STRONG, (9, 10)))
        for turn, score in zip((1, 2), scores, strict=True)
    ]
    (folder / "mt_bench" / "judgements.jsonl").write_text(
        "".join(json.dumps(j) + "\n" for j in judgements)
    )
    return root


def test_tables_are_read_decontaminated(tmp_path: Path) -> None:
    root = datasets(tmp_path)
    assert data.mmlu(root) == [data.Outcome(MATH, 0.0, 1.0)]
    assert data.gsm8k(root) == [data.Outcome(EGGS, 1.0, 1.0), data.Outcome(LEGS, 0.0, 1.0)]
    assert data.mt_bench(root) == [data.Outcome("Write a poem.", 7.0, 9.5)]
    (solved,) = data.gsm8k_solutions(root)
    assert solved.steps == 2


@pytest.mark.parametrize("prompt", ["a", "b", "What is 2+2?", "How many eggs?", "é"])
def test_the_split_is_the_parity_of_the_sha1(prompt: str) -> None:
    outcome = data.Outcome(prompt, 0.0, 1.0)
    assert data.in_test_half(prompt) is _odd(prompt)
    half = "test" if _odd(prompt) else "train"
    assert data.split([outcome], half) == [outcome]
    assert data.split([outcome], "train" if half == "test" else "test") == []


def test_missing_datasets_say_where_they_were_looked_for(tmp_path: Path) -> None:
    with pytest.raises(data.DatasetsMissing, match=str(tmp_path / "routellm")):
        data.mmlu(tmp_path)
