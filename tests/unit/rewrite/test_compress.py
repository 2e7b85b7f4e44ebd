"""History compression: tables for the shape of the result, and the cut's stability."""

from __future__ import annotations

import itertools

import pytest

from gateway.classify import EstimateCounter
from gateway.rewrite.history_trim import (
    NOTE_OPEN,
    NOTE_ROLE,
    CompressConfig,
    Method,
    compress,
    with_summary,
)
from tests.unit.rewrite.compress_helpers import WordCounter, conversation, msg, tool_turn, words

COUNTER = WordCounter()


def test_under_budget_nothing_changes() -> None:
    messages = conversation(3)
    result = compress(messages, COUNTER, CompressConfig(budget_tokens=10_000))
    assert result.fits
    assert result.record is None
    assert list(result.messages) == messages


def test_over_budget_keeps_head_and_last_turns_and_marks_the_gap() -> None:
    messages = conversation(10)  # 2 + 20 messages of 20 words: 3 + 21 * 24 + 7 tokens
    result = compress(messages, COUNTER, CompressConfig(budget_tokens=200, keep_last_turns=2))
    out = list(result.messages)
    assert result.fits
    assert out[:2] == messages[:2]  # system prompt, first user message
    assert out[2]["role"] == NOTE_ROLE
    assert out[2]["content"].startswith(NOTE_OPEN)
    assert out[3:] == messages[-len(out) + 3 :]
    assert out[-4:] == messages[-4:]  # the last two turns at least
    record = result.record
    assert record is not None
    assert record.method is Method.TRUNCATED
    assert record.tokens_after == COUNTER.count_messages(out) <= 200
    assert record.tokens_before == COUNTER.count_messages(messages)
    assert record.dropped_messages == len(messages) - len(out) + 1
    assert f"{record.dropped_messages} earlier messages" in out[2]["content"]
    assert record.header_value() == (
        f"method=truncated; dropped={record.dropped_messages}; "
        f"tokens={record.tokens_before}->{record.tokens_after}"
    )


def test_tool_calls_stay_with_their_results() -> None:
    messages = [msg("system", "s"), *[m for t in range(8) for m in tool_turn(t, 15)]]
    result = compress(messages, COUNTER, CompressConfig(budget_tokens=220, keep_last_turns=1))
    out = list(result.messages)
    assert result.record is not None
    calls = {c["id"] for m in out for c in m.get("tool_calls") or []}
    answered = {m["tool_call_id"] for m in out if m["role"] == "tool"}
    assert calls == answered
    assert out[-4:] == messages[-4:]


def test_instructions_inside_the_dropped_run_are_kept_after_the_note() -> None:
    messages = conversation(8)
    messages.insert(5, msg("system", "Answer in French from now on."))
    result = compress(messages, COUNTER, CompressConfig(budget_tokens=200, keep_last_turns=2))
    out = list(result.messages)
    assert out[2]["role"] == NOTE_ROLE
    assert out[3] == messages[5]
    assert result.record is not None
    assert result.record.tokens_after == COUNTER.count_messages(out)


@pytest.mark.parametrize(
    ("messages", "why"),
    [
        (conversation(1, size=500), "a single turn has no middle"),
        (conversation(3, size=200), "the last turns alone are over the budget"),
        ([msg("system", words(500, "s")), msg("user", "hi")], "the head alone is over"),
    ],
)
def test_cannot_fit_leaves_the_request_alone(messages: list[dict[str, str]], why: str) -> None:
    result = compress(messages, COUNTER, CompressConfig(budget_tokens=300, keep_last_turns=2))
    assert not result.fits, why
    assert result.record is None
    assert list(result.messages) == messages


def test_cut_moves_in_steps_so_the_compressed_prefix_is_shared() -> None:
    config = CompressConfig(budget_tokens=400, keep_last_turns=2, step_tokens=150)
    outputs = [compress(conversation(t), COUNTER, config) for t in range(9, 18)]
    ends = [r.cut.end for r in outputs if r.cut is not None]
    assert len(ends) == len(outputs)
    assert ends == sorted(ends)
    assert len(set(ends)) < len(ends)  # consecutive requests share a cut
    for one, two in itertools.pairwise(outputs):
        if one.cut == two.cut:
            shared = len(one.messages)
            assert two.messages[:shared] == one.messages


def test_counts_agree_with_the_estimate_counter() -> None:
    counter = EstimateCounter()
    messages = conversation(12, size=40)
    result = compress(messages, counter, CompressConfig(budget_tokens=2000, keep_last_turns=3))
    assert result.record is not None
    assert result.record.tokens_after == counter.count_messages(result.messages)
    assert result.record.tokens_before == counter.count_messages(messages)


def test_summary_replaces_the_marker_when_it_fits() -> None:
    messages = conversation(10)
    config = CompressConfig(budget_tokens=200, keep_last_turns=2)
    truncated = compress(messages, COUNTER, config)
    summary = with_summary(truncated, "They agreed on 42 units.", COUNTER, 200)
    assert summary is not None
    assert summary.record is not None
    assert summary.record.method is Method.SUMMARY
    note = summary.messages[2]["content"]
    assert note.startswith(NOTE_OPEN)
    assert note.endswith("They agreed on 42 units.")
    assert summary.record.tokens_after == COUNTER.count_messages(summary.messages)
    assert summary.messages[3:] == truncated.messages[3:]
    assert summary.dropped == truncated.dropped
    too_long = words(300, "w")
    assert with_summary(truncated, too_long, COUNTER, 200) is None


def test_a_partial_summary_says_what_it_covers() -> None:
    truncated = compress(conversation(10), COUNTER, CompressConfig(200, keep_last_turns=2))
    assert truncated.record is not None
    dropped = truncated.record.dropped_messages
    partial = with_summary(truncated, "They agreed on 42 units.", COUNTER, 200, covered=3)
    assert partial is not None
    assert partial.record is not None
    assert partial.record.method is Method.PARTIAL_SUMMARY
    note = partial.messages[2]["content"]
    assert note.startswith(f"{NOTE_OPEN}summary of the first 3 of {dropped} earlier messages")
    assert f"the other {dropped - 3} were left out" in note
    assert partial.record.tokens_after == COUNTER.count_messages(partial.messages)
    assert with_summary(partial, "again", COUNTER, 200) is None  # only on a truncation


def test_config_validation() -> None:
    with pytest.raises(ValueError, match="keep_last_turns"):
        CompressConfig(budget_tokens=100, keep_last_turns=0)
    with pytest.raises(ValueError, match="step_tokens"):
        CompressConfig(budget_tokens=100, step_tokens=0)
    assert CompressConfig(budget_tokens=100).step == 25
