"""The Azure LLM inference trace 2023 (conversation, code) as planned requests.

The CSV (``TIMESTAMP,ContextTokens,GeneratedTokens``, one row per request, see the data's
README) gives real arrival times and token counts, not prompts. Algorithm:

- ``parse_trace``: rows in time order, each as its offset in seconds from the first arrival
  and its token counts (timestamps carry 7 fractional digits, more than ``datetime`` reads, so
  the fraction is read apart).
- ``first``: the head of the trace: at most ``minutes`` of it and at most ``requests`` rows.
- ``time_scaled``: offsets multiplied by one factor so that the mean arrival rate, ``(n - 1) /
  span``, becomes ``rate``; gaps keep their shape (bursts stay bursts).
- ``trace_requests``: each row becomes one user message of filler text whose rendered chat
  prompt counts exactly ``ContextTokens`` for the simulator's tokenizer, ``max_tokens =
  GeneratedTokens`` and ``ignore_eos`` (the engine generates exactly that many; the model has no
  opinion on when to stop). A prompt that would not fit ``max_model_len`` with its output is
  cut to fit (``Clipped`` counts them). Content is drawn from a seeded RNG per row.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import random
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from loadtests.loadgen import texts
from loadtests.loadgen.request import PlannedRequest
from loadtests.sim.generation import chat_prompt
from loadtests.sim.tokenizer import count_tokens

TRACES = ("conv", "code")


@dataclass(frozen=True, slots=True)
class TraceRow:
    at_s: float
    context_tokens: int
    generated_tokens: int


def _timestamp(text: str) -> float:
    whole, _, fraction = text.strip().partition(".")
    seconds = dt.datetime.fromisoformat(whole).replace(tzinfo=dt.UTC).timestamp()
    return seconds + (float("0." + fraction) if fraction else 0.0)


def parse_trace(text: str) -> list[TraceRow]:
    """Rows of a trace CSV in time order, offsets from the first arrival."""
    raw = [
        (_timestamp(r["TIMESTAMP"]), int(r["ContextTokens"]), int(r["GeneratedTokens"]))
        for r in csv.DictReader(io.StringIO(text))
    ]
    raw.sort(key=lambda row: row[0])
    start = raw[0][0] if raw else 0.0
    return [TraceRow(t - start, ctx, gen) for t, ctx, gen in raw]


def trace_path(root: Path, name: str) -> Path:
    """``<root>/azure-llm-2023/<name>.csv``."""
    if name not in TRACES:
        raise ValueError(f"unknown trace {name!r}; choose from {TRACES}")
    return root / "azure-llm-2023" / f"{name}.csv"


def first(
    rows: Sequence[TraceRow], minutes: float | None = None, requests: int | None = None
) -> list[TraceRow]:
    """The head of the trace within both bounds (none: all of it)."""
    out = [r for r in rows if minutes is None or r.at_s < minutes * 60]
    return out[:requests] if requests is not None else out


def mean_rate(rows: Sequence[TraceRow]) -> float:
    """Arrivals per second, ``(n - 1) / span``; needs two rows at distinct times."""
    if len(rows) < 2 or rows[-1].at_s <= rows[0].at_s:
        raise ValueError("a rate needs at least two arrivals at distinct times")
    return (len(rows) - 1) / (rows[-1].at_s - rows[0].at_s)


def time_scaled(rows: Sequence[TraceRow], rate: float) -> list[TraceRow]:
    """The rows with offsets (from the first) scaled so the mean rate is ``rate``."""
    if rate <= 0:
        raise ValueError("rate must be positive")
    factor = mean_rate(rows) / rate
    start = rows[0].at_s
    return [replace(r, at_s=(r.at_s - start) * factor) for r in rows]


_TEMPLATE_TOKENS = count_tokens(chat_prompt([{"role": "user", "content": ""}]))


@dataclass(frozen=True, slots=True)
class Clipped:
    requests: int = 0  # prompts cut to fit the context window
    tokens: int = 0  # prompt tokens cut in all


def trace_requests(
    rows: Sequence[TraceRow], model: str, seed: int, max_model_len: int, label: str
) -> tuple[list[PlannedRequest], Clipped]:
    """One planned request per row (module docstring) and what had to be cut."""
    out: list[PlannedRequest] = []
    clipped = Clipped()
    for i, row in enumerate(rows):
        output = max(1, row.generated_tokens)
        prompt = max(_TEMPLATE_TOKENS + 1, min(row.context_tokens, max_model_len - output))
        if prompt < row.context_tokens:
            clipped = Clipped(clipped.requests + 1, clipped.tokens + row.context_tokens - prompt)
        rng = random.Random(f"{seed}:azure:{label}:{i}")
        content = texts.filler(rng, prompt - _TEMPLATE_TOKENS)
        out.append(
            PlannedRequest(
                index=i,
                at_s=row.at_s,
                label=label,
                model=model,
                messages=[{"role": "user", "content": content}],
                max_tokens=output,
                temperature=0.0,
                extra={"ignore_eos": True},
            )
        )
    return out, clipped
