"""RouteLLM's published rows, read from the markdown transcription."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadtests.router_quality.published import PublishedRow, read_published

TEXT = """# RouteLLM's published router results

Some prose | with a pipe.

## MT-Bench (GPT-4 judge)

| training data | router | CPT(50%) | CPT(80%) | APGR |
|---|---|---|---|---|
| - | random (95% CI) | 49.03 (±4)% | 78.08 (±3)% | 0.500 (±0.02) |
| D_arena + D_judge | matrix factorization | 13.40% | 31.31% | 0.802 |

## MMLU (5-shot, 14,042 questions)

| training data | router | CPT(50%) | CPT(80%) | APGR |
|---|---|---|---|---|
| D_arena + D_gold | SW ranking | 35.40% | 71.55% | 0.603 |

## Cost saving of their best router (Table 6)

| a | b | c | d | e |
"""


def test_rows_are_read_per_benchmark(tmp_path: Path) -> None:
    path = tmp_path / "PUBLISHED.md"
    path.write_text(TEXT)
    assert read_published(path) == [
        PublishedRow("mt_bench", "-", "random (95% CI)", 0.4903, 0.7808, 0.5),
        PublishedRow("mt_bench", "D_arena + D_judge", "matrix factorization", 0.134, 0.3131, 0.802),
        PublishedRow("mmlu", "D_arena + D_gold", "SW ranking", 0.354, 0.7155, 0.603),
    ]


def test_an_unreadable_row_is_named(tmp_path: Path) -> None:
    path = tmp_path / "PUBLISHED.md"
    path.write_text("## GSM8K\n| D_arena | BERT | n/a | 83.84% | 0.438 |\n")
    with pytest.raises(ValueError, match=r"PUBLISHED.md:2"):
        read_published(path)
