"""History compression: fit a long conversation into a token budget by dropping its middle.

Algorithm. The conversation is read as a head, turns and a tail:

- the head is every message up to and including the first user message (the system
  prompt(s) and the task statement); it is always kept verbatim;
- a turn starts at a user message and runs to the next one, so an assistant's tool calls
  and their tool results always sit in the same turn and are dropped or kept together;
- the tail is the last ``keep_last_turns`` turns (the last user message is in it); kept.

Over the budget, the messages after the head up to the start of a later turn (the rest of
the first turn and whole turns after it) are dropped and one marked note message takes
their place: a truncation marker, or a summary of the dropped messages
(``with_summary``). The note has the ``assistant`` role because it sits between the first
user message and a user message, which keeps user/assistant alternation for chat templates
that insist on it. System and developer messages inside the dropped run are instructions,
not history: they are kept, in order, after the note.

Where to cut: the cut only ever lands on "step" turn boundaries, the first turn boundary at
or after each multiple of ``step_tokens`` counted from the head's end. These positions do not
move as the conversation grows (earlier messages never change), so consecutive requests of
one conversation keep the same compressed prefix until the next step is needed: the
backend's prefix cache keeps hitting and a summary of the dropped run stays reusable. The
earliest step cut that fits is taken; if none does, the latest possible cut (just before the
tail); if even that does not fit, nothing is changed and ``fits`` is False. The step cuts
tried before the chosen one are reported (``Compression.earlier``): shorter versions of the
conversation were cut there, so their summaries can be extended rather than rewritten.

Parameters (``CompressConfig``): ``budget_tokens`` (prompt tokens allowed), ``keep_last_turns``
(N >= 1), ``step_tokens`` (cut granularity; default a quarter of the budget). Counting uses a
``TokenCounter`` whose message counts are additive (template overhead per message plus a
fixed reply priming), as every counter in ``gateway.classify`` is. Pure: nothing is modified.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from gateway.classify.tokens import TokenCounter
from gateway.openai.messages import Message

NOTE_ROLE = "assistant"
NOTE_OPEN = "[Gateway note: "
_PINNED_ROLES = frozenset({"system", "developer"})


class Method(StrEnum):
    TRUNCATED = "truncated"
    SUMMARY = "summary"
    PARTIAL_SUMMARY = "partial_summary"  # a summary of the first dropped messages only


@dataclass(frozen=True, slots=True)
class CompressConfig:
    budget_tokens: int
    keep_last_turns: int = 4
    step_tokens: int | None = None  # default: budget_tokens // 4

    def __post_init__(self) -> None:
        if self.budget_tokens < 1 or self.keep_last_turns < 1:
            raise ValueError("need budget_tokens >= 1 and keep_last_turns >= 1")
        if self.step_tokens is not None and self.step_tokens < 1:
            raise ValueError("step_tokens must be >= 1")

    @property
    def step(self) -> int:
        return self.step_tokens if self.step_tokens is not None else max(1, self.budget_tokens // 4)


@dataclass(frozen=True, slots=True)
class Cut:
    """Messages ``start`` up to (not including) ``end`` are replaced, except ``pinned``."""

    start: int
    end: int
    pinned: tuple[int, ...]
    turns: int

    def dropped(self, messages: Sequence[Message]) -> tuple[Message, ...]:
        keep = set(self.pinned)
        return tuple(messages[i] for i in range(self.start, self.end) if i not in keep)


@dataclass(frozen=True, slots=True)
class CompressionRecord:
    """What a compression did, for the ``x-gateway-compressed`` header, logs and metrics."""

    method: Method
    dropped_messages: int
    dropped_turns: int
    tokens_before: int
    tokens_after: int

    def header_value(self) -> str:
        return (
            f"method={self.method.value}; dropped={self.dropped_messages}; "
            f"tokens={self.tokens_before}->{self.tokens_after}"
        )


@dataclass(frozen=True, slots=True)
class Compression:
    """The outcome: ``messages`` to send (``source`` itself when nothing was done)."""

    source: tuple[Message, ...]
    messages: tuple[Message, ...]
    tokens_before: int
    fits: bool  # ``messages`` are within the budget
    cut: Cut | None = None
    record: CompressionRecord | None = None
    # Step cuts before ``cut``, earliest first: what shorter versions of this conversation
    # were cut at, so a summary written then can be extended instead of rewritten.
    earlier: tuple[Cut, ...] = ()

    @property
    def dropped(self) -> tuple[Message, ...]:
        """The messages the note replaces (what a summary must cover)."""
        return () if self.cut is None else self.cut.dropped(self.source)


def truncation_note(dropped_messages: int, dropped_turns: int) -> str:
    return (
        f"{NOTE_OPEN}{dropped_messages} earlier messages ({dropped_turns} turns) of this "
        "conversation were left out here to fit the context window.]"
    )


def summary_note(dropped_messages: int, summary: str, covered: int | None = None) -> str:
    if covered is None:
        head = f"{NOTE_OPEN}summary of {dropped_messages} earlier messages of this conversation]"
    else:
        head = (
            f"{NOTE_OPEN}summary of the first {covered} of {dropped_messages} earlier messages "
            f"of this conversation; the other {dropped_messages - covered} were left out here "
            "to fit the context window]"
        )
    return f"{head}\n{summary}"


def compress(
    messages: Sequence[Message], counter: TokenCounter, config: CompressConfig
) -> Compression:
    """Drop whole turns after the head until the prompt fits ``config.budget_tokens``."""
    source = tuple(messages)
    costs = _Costs(source, counter)
    unchanged = Compression(source, source, costs.total, fits=costs.total <= config.budget_tokens)
    if unchanged.fits:
        return unchanged
    tried: list[Cut] = []
    for cut in _preferred(_candidate_cuts(source, config.keep_last_turns), costs, config.step):
        note = truncation_note(_dropped_count(cut), cut.turns)
        after = costs.after(cut, note)
        if after <= config.budget_tokens:
            built = _build(source, cut, note, Method.TRUNCATED, costs.total, after)
            return replace(built, earlier=tuple(tried))
        tried.append(cut)
    return unchanged


def with_summary(
    compression: Compression,
    summary: str,
    counter: TokenCounter,
    budget_tokens: int,
    covered: int | None = None,
) -> Compression | None:
    """A truncation's cut with ``summary`` as the note; None when over the budget.

    ``covered``: the summary is of only the first ``covered`` dropped messages (an earlier
    cut's summary while the current one is being written); the note says so.
    """
    cut, record = compression.cut, compression.record
    if cut is None or record is None or record.method is not Method.TRUNCATED:
        return None
    old = truncation_note(record.dropped_messages, record.dropped_turns)
    note = summary_note(record.dropped_messages, summary, covered)
    after = record.tokens_after + counter.count(note) - counter.count(old)
    if after > budget_tokens:
        return None
    method = Method.SUMMARY if covered is None else Method.PARTIAL_SUMMARY
    built = _build(compression.source, cut, note, method, record.tokens_before, after)
    return replace(built, earlier=compression.earlier)


def _dropped_count(cut: Cut) -> int:
    return cut.end - cut.start - len(cut.pinned)


def _build(
    source: tuple[Message, ...], cut: Cut, note: str, method: Method, before: int, after: int
) -> Compression:
    pinned = [source[i] for i in cut.pinned]
    out = (*source[: cut.start], _note_message(note), *pinned, *source[cut.end :])
    record = CompressionRecord(method, _dropped_count(cut), cut.turns, before, after)
    return Compression(source, out, before, fits=True, cut=cut, record=record)


def _note_message(note: str) -> dict[str, Any]:
    return {"role": NOTE_ROLE, "content": note}


def _candidate_cuts(messages: Sequence[Message], keep_last_turns: int) -> list[Cut]:
    """Every cut that keeps the head and the tail and drops at least one message."""
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    if len(users) < 2:
        return []
    start = users[0] + 1
    cuts = []
    pinned: list[int] = []
    scanned = start
    # Cutting at users[k] drops turns 1..k-1 (the first turn's user message is the head).
    for turns, end in enumerate(users[1 : len(users) - keep_last_turns + 1], start=1):
        pinned += (i for i in range(scanned, end) if messages[i].get("role") in _PINNED_ROLES)
        scanned = end
        if end - start > len(pinned):
            cuts.append(Cut(start, end, tuple(pinned), turns))
    return cuts


def _preferred(cuts: list[Cut], costs: _Costs, step: int) -> list[Cut]:
    """Step cuts, earliest first, then the latest cut: the order in which to try them."""
    if not cuts:
        return []
    origin = costs.prefix[cuts[0].start]
    steps = []
    reached = 0
    for cut in cuts:
        level = (costs.prefix[cut.end] - origin) // step
        if level > reached:
            steps.append(cut)
            reached = level
    if not steps or steps[-1] is not cuts[-1]:
        steps.append(cuts[-1])
    return steps


class _Costs:
    """Per-message token costs and their prefix sums (counts are additive per message)."""

    def __init__(self, messages: Sequence[Message], counter: TokenCounter) -> None:
        self._counter = counter
        probe: Message = {"role": "user", "content": ""}
        one = counter.count_messages([probe])
        self.priming = 2 * one - counter.count_messages([probe, probe])
        costs = [counter.count_messages([m]) - self.priming for m in messages]
        self.prefix = [0, *itertools.accumulate(costs)]
        self.total = self.prefix[-1] + (self.priming if messages else 0)

    def after(self, cut: Cut, note: str) -> int:
        removed = self.prefix[cut.end] - self.prefix[cut.start]
        kept = sum(self.prefix[i + 1] - self.prefix[i] for i in cut.pinned)
        return self.total - removed + kept + self.message(note)

    def message(self, note: str) -> int:
        return self._counter.count_messages([_note_message(note)]) - self.priming
