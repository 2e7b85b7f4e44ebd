"""Properties of history compression over generated conversations.

The head (everything up to the first user message) and the last N turns survive verbatim and
in order; the rest of the output is a subsequence of the input plus one note; the output is
within the budget whenever the kept part fits; tool calls keep their results; compressing
twice changes nothing more; and as a conversation grows the cut never moves backwards.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.rewrite.history_trim import NOTE_OPEN, NOTE_ROLE, CompressConfig, compress
from tests.unit.rewrite.compress_helpers import WordCounter, msg, tool_turn, words

COUNTER = WordCounter()


@st.composite
def turn(draw: st.DrawFn, t: int) -> list[dict[str, Any]]:
    size = draw(st.integers(1, 60))
    kind = draw(st.sampled_from(["plain", "tool", "system", "user_only"]))
    if kind == "tool":
        return tool_turn(t, size)
    out = [msg("user", words(size, f"u{t}_"))]
    if kind == "system":
        out.append(msg("system", words(3, f"s{t}_")))
    if kind != "user_only":
        out.append(msg("assistant", words(draw(st.integers(1, 60)), f"a{t}_")))
    return out


@st.composite
def conversations(draw: st.DrawFn) -> list[dict[str, Any]]:
    head = [msg("system", words(n, "sys")) for n in draw(st.lists(st.integers(1, 40), max_size=2))]
    count = draw(st.integers(0, 12))
    return head + [m for t in range(count) for m in draw(turn(t))]


CONFIGS = st.builds(
    CompressConfig,
    budget_tokens=st.integers(50, 1500),
    keep_last_turns=st.integers(1, 4),
    step_tokens=st.one_of(st.none(), st.integers(1, 400)),
)


def _users(messages: list[dict[str, Any]]) -> list[int]:
    return [i for i, m in enumerate(messages) if m["role"] == "user"]


def _is_subsequence(part: list[Any], whole: list[Any]) -> bool:
    it = iter(whole)
    return all(any(p is w for w in it) for p in part)


@settings(max_examples=300, deadline=None)
@given(conversations(), CONFIGS)
def test_head_and_tail_survive_and_the_rest_is_a_subsequence(
    messages: list[dict[str, Any]], config: CompressConfig
) -> None:
    result = compress(messages, COUNTER, config)
    out = list(result.messages)
    if result.record is None:
        assert out == messages
        return
    users = _users(messages)
    head = messages[: users[0] + 1]
    tail = messages[users[-config.keep_last_turns] :]
    assert out[: len(head)] == head
    assert out[len(out) - len(tail) :] == tail
    notes = [m for m in out if m["content"] and str(m["content"]).startswith(NOTE_OPEN)]
    assert len(notes) == 1
    assert notes[0]["role"] == NOTE_ROLE
    assert _is_subsequence([m for m in out if m is not notes[0]], messages)
    assert result.record.tokens_after == COUNTER.count_messages(out) <= config.budget_tokens
    calls = {c["id"] for m in out for c in m.get("tool_calls") or []}
    assert calls == {m["tool_call_id"] for m in out if m["role"] == "tool"}
    kept_system = [m for m in messages if m["role"] == "system"]
    assert [m for m in out if m["role"] == "system"] == kept_system


@settings(max_examples=300, deadline=None)
@given(conversations(), CONFIGS)
def test_fits_whenever_the_kept_part_fits(
    messages: list[dict[str, Any]], config: CompressConfig
) -> None:
    result = compress(messages, COUNTER, config)
    users = _users(messages)
    if len(users) <= config.keep_last_turns:
        return  # no middle to drop
    start, end = users[0] + 1, users[-config.keep_last_turns]
    pinned = [m for m in messages[start:end] if m["role"] == "system"]
    if len(pinned) == end - start:
        return  # nothing droppable
    kept = [*messages[:start], msg(NOTE_ROLE, "x " * 40), *pinned, *messages[end:]]
    if COUNTER.count_messages(kept) <= config.budget_tokens:
        assert result.fits


@settings(max_examples=300, deadline=None)
@given(conversations(), CONFIGS)
def test_compressing_twice_changes_nothing_more(
    messages: list[dict[str, Any]], config: CompressConfig
) -> None:
    once = compress(messages, COUNTER, config)
    twice = compress(once.messages, COUNTER, config)
    assert twice.messages == once.messages


@settings(max_examples=200, deadline=None)
@given(conversations(), CONFIGS)
def test_the_cut_never_moves_backwards_as_the_conversation_grows(
    messages: list[dict[str, Any]], config: CompressConfig
) -> None:
    users = _users(messages)
    ends = []
    for stop in [*users[1:], len(messages)]:
        result = compress(messages[:stop], COUNTER, config)
        if result.cut is not None:
            ends.append(result.cut.end)
    assert ends == sorted(ends)


@settings(max_examples=200, deadline=None)
@given(conversations(), CONFIGS)
def test_earlier_cuts_drop_a_prefix_of_what_the_cut_drops(
    messages: list[dict[str, Any]], config: CompressConfig
) -> None:
    result = compress(messages, COUNTER, config)
    ends = [cut.end for cut in result.earlier]
    assert ends == sorted(ends)
    for earlier in result.earlier:
        covered = earlier.dropped(result.source)
        assert result.dropped[: len(covered)] == covered
        assert len(covered) < len(result.dropped)
