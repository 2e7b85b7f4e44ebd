"""Build ``tests/data/difficulty_eval.jsonl``: hand-written prompts plus templated ones.

Run ``python -m loadtests.kit.difficulty_set`` to rewrite the file; a test checks that
the committed file matches what this produces. Each (domain, label) cell is topped up to
``PER_CELL`` prompts with templates filled from a seeded RNG, so the set is reproducible.
"""

from __future__ import annotations

import json
import random
import string
from pathlib import Path

from loadtests.kit.difficulty_set.handwritten import ALL as HANDWRITTEN
from loadtests.kit.difficulty_set.templates import CODE_SNIPPETS, SLOTS, TEMPLATES, TEXTS

PER_CELL = 35
SEED = 20240611
DOMAINS = ("chat", "code", "math", "extraction", "reasoning")
LABELS = ("easy", "hard")
OUT = Path(__file__).resolve().parents[3] / "tests" / "data" / "difficulty_eval.jsonl"


def _fields(template: str) -> list[str]:
    return [name for _, name, _, _ in string.Formatter().parse(template) if name]


def _fill(template: str, rng: random.Random) -> str:
    values: dict[str, str] = {}
    for name in _fields(template):
        if name in values:
            continue
        if name in ("code", "code_lang"):
            values["code_lang"], values["code"] = rng.choice(CODE_SNIPPETS)
        elif name in ("text", "passage_name"):
            values["passage_name"] = rng.choice(sorted(TEXTS))
            values["text"] = TEXTS[values["passage_name"]]
        else:
            values[name] = rng.choice(SLOTS[name])
    return template.format(**values)


def _templated(domain: str, label: str, need: int, seen: set[str], rng: random.Random) -> list[str]:
    templates = TEMPLATES[(domain, label)]
    out: list[str] = []
    attempts = 0
    while len(out) < need and attempts < 200 * need:
        prompt = _fill(templates[attempts % len(templates)], rng)
        attempts += 1
        if prompt not in seen:
            seen.add(prompt)
            out.append(prompt)
    return out


def build() -> list[dict[str, str]]:
    rng = random.Random(SEED)
    rows: list[dict[str, str]] = []
    seen: set[str] = set()
    for domain in DOMAINS:
        for label in LABELS:
            hand = [t for d, lab, t in HANDWRITTEN if d == domain and lab == label]
            seen.update(hand)
            made = _templated(domain, label, PER_CELL - len(hand), seen, rng)
            rows += [{"prompt": t, "label": label, "domain": domain} for t in hand + made]
    rng.shuffle(rows)
    return rows


def render(rows: list[dict[str, str]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def main() -> None:
    OUT.write_text(render(build()), encoding="utf-8")
