"""RouteLLM's published router results, read from ``../shared/datasets/routellm/PUBLISHED.md``.

Source: Ong et al., "RouteLLM: Learning to Route LLMs with Preference Data", arXiv
2406.18665v4 (ICLR 2025), Tables 1-3: the same strong/weak pair as the outcome tables
(gpt-4-1106-preview, Mixtral-8x7B-Instruct), on the whole decontaminated benchmarks. The file
transcribes them as one markdown table per benchmark (``## MT-Bench``, ``## MMLU``,
``## GSM8K``) with the columns ``training data | router | CPT(50%) | CPT(80%) | APGR``; a cell
such as ``49.03 (±4)%`` is read as its leading number (the confidence interval is dropped).
Their training data: ``D_arena`` (~65k Chatbot Arena battles), ``D_judge`` (~120k GPT-4-judged
Nectar pairs), ``D_gold`` (~1,500 MMLU validation questions).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

HEADINGS = {"MT-Bench": "mt_bench", "MMLU": "mmlu", "GSM8K": "gsm8k"}
CITATION = "Ong et al., RouteLLM, arXiv 2406.18665v4, Tables 1-3"
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


@dataclass(frozen=True, slots=True)
class PublishedRow:
    benchmark: str  # mmlu, gsm8k, mt_bench
    training: str  # their training data, "-" for random
    router: str
    cpt50: float  # share of strong calls, in [0, 1]
    cpt80: float
    apgr: float


def published_path(datasets: Path) -> Path:
    return datasets / "routellm" / "PUBLISHED.md"


def read_published(path: Path) -> list[PublishedRow]:
    """Every row of the file's benchmark tables; ``ValueError`` names a row it cannot read."""
    rows: list[PublishedRow] = []
    benchmark: str | None = None
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("## "):
            benchmark = next((v for k, v in HEADINGS.items() if line[3:].startswith(k)), None)
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if benchmark is None or not line.startswith("|") or len(cells) != 5:
            continue
        if cells[0] == "training data" or all(set(cell) <= {"-", ":"} for cell in cells):
            continue  # the header and the separator
        try:
            cpt50, cpt80, apgr = (_leading(cell) for cell in cells[2:])
        except ValueError:
            raise ValueError(f"{path}:{number}: cannot read {line!r}") from None
        shares = round(cpt50 / 100, 6), round(cpt80 / 100, 6)
        rows.append(PublishedRow(benchmark, cells[0], cells[1], *shares, apgr))
    return rows


def _leading(cell: str) -> float:
    found = _NUMBER.search(cell)
    if found is None:
        raise ValueError(cell)
    return float(found.group())
