"""Prefix-break explanations: one table row per cause, and where the break is."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.rewrite import (
    BreakCause,
    PrefixExplainer,
    RewriteConfig,
    canonicalize,
    estimate_tokens,
    serialize,
)
from gateway.rewrite.explain import common_prefix_length
from tests.unit.rewrite.helpers import chat, tool

ON = RewriteConfig()
LAST_USER = RewriteConfig(note_placement="last_user_suffix")  # type: ignore[arg-type]
EXPLAINER = PrefixExplainer(ON.matcher)
SYS = "You are helpful. Follow the rules below carefully."
T1 = [tool("lookup", q={"type": "string", "description": "query"}), tool("refund")]
T2 = [tool("refund"), tool("lookup", q={"type": "string", "description": "query"})]
T_KEYS = [{"function": T1[0]["function"], "type": "function"}, T1[1]]


def _prompt(body: dict[str, Any], config: RewriteConfig | None) -> Any:
    return serialize(body if config is None else canonicalize(body, config).body)


# id -> (previous body, current body, rewrite config or None for off, cause, text at the break)
CASES: dict[str, tuple[dict[str, Any], dict[str, Any], RewriteConfig | None, BreakCause, str]] = {
    "timestamp, rewrite off": (
        chat(("system", f"Now 2026-11-21T14:03:07Z. {SYS}"), ("user", "hi")),
        chat(("system", f"Now 2026-11-21T14:03:09Z. {SYS}"), ("user", "hi")),
        None,
        BreakCause.TIMESTAMP,
        "9Z. You",
    ),
    "timestamp in the note": (
        chat(("system", f"{SYS} Now Nov 21, 2026."), ("user", "hi")),
        chat(("system", f"{SYS} Now Nov 22, 2026."), ("user", "hi")),
        ON,
        BreakCause.TIMESTAMP,
        "2, 2026]",
    ),
    "epoch": (
        chat(("system", f"{SYS} time: 1795298300"), ("user", "hi")),
        chat(("system", f"{SYS} time: 1795298301"), ("user", "hi")),
        None,
        BreakCause.TIMESTAMP,
        "1\n<|user|>",
    ),
    "moved note, next turn": (
        chat(("system", f"{SYS} Now 2026-11-21."), ("user", "hi")),
        chat(
            ("system", f"{SYS} Now 2026-11-22."), ("user", "hi"), ("assistant", "yo"), ("user", "x")
        ),
        LAST_USER,
        BreakCause.TIMESTAMP,
        "<|assistant|>",
    ),
    "request id": (
        chat(("system", f"request-id: 8f3a21. {SYS}"), ("user", "hi")),
        chat(("system", f"request-id: 9a0b11. {SYS}"), ("user", "hi")),
        None,
        BreakCause.ID,
        "9a0b11.",
    ),
    "uuid": (
        chat(("system", f"{SYS} Session 3f2a1c4e-1b2c-4d5e-8f90-0123456789ab"), ("user", "a")),
        chat(("system", f"{SYS} Session 3f2a1c4e-1b2c-4d5e-8f90-ffffffffffff"), ("user", "a")),
        ON,
        BreakCause.ID,
        "ffffffffffff]",
    ),
    "tool order": (
        chat(("system", SYS), ("user", "hi"), tools=T1),
        chat(("system", SYS), ("user", "hi"), tools=T2),
        None,
        BreakCause.TOOL_ORDER,
        'refund","parameters"',
    ),
    "tool key order": (
        chat(("system", SYS), ("user", "hi"), tools=T1),
        chat(("system", SYS), ("user", "hi"), tools=T_KEYS),
        None,
        BreakCause.TOOL_ORDER,
        'function":{"name":"lookup"',
    ),
    "tool changed": (
        chat(("system", SYS), ("user", "hi"), tools=T1),
        chat(("system", SYS), ("user", "hi"), tools=[T1[0], tool("refund", amount={})]),
        ON,
        BreakCause.OTHER,
        '"amount":{}}',
    ),
    "whitespace, rewrite off": (
        chat(("system", SYS), ("user", "hi"), ("assistant", "yo\n\n\n\nok"), ("user", "x")),
        chat(
            ("system", SYS),
            ("user", "hi"),
            ("assistant", "yo\n\nok"),
            ("user", "x"),
            ("assistant", "z"),
        ),
        None,
        BreakCause.WHITESPACE,
        "ok\n<|user|>",
    ),
    "whitespace in code": (
        chat(("system", SYS), ("user", "```\nx = 1  \n```"), ("assistant", "ok")),
        chat(("system", SYS), ("user", "```\nx = 1\n```"), ("assistant", "ok")),
        ON,
        BreakCause.WHITESPACE,
        "\n```",
    ),
    "edited assistant turn": (
        chat(("system", SYS), ("user", "hi"), ("assistant", "Hello there"), ("user", "x")),
        chat(("system", SYS), ("user", "hi"), ("assistant", "Hello you"), ("user", "x")),
        ON,
        BreakCause.EDITED_HISTORY,
        "you\n",
    ),
    "dropped first turns": (
        chat(("system", SYS), ("user", "one"), ("assistant", "two"), ("user", "three")),
        chat(("system", SYS), ("user", "three"), ("assistant", "four"), ("user", "five")),
        ON,
        BreakCause.EDITED_HISTORY,
        "three\n<|assistant|>\nfour",
    ),
    "system prompt edited": (
        chat(("system", SYS), ("user", "hi")),
        chat(("system", SYS.replace("rules", "policy")), ("user", "hi")),
        ON,
        BreakCause.SYSTEM_PROMPT,
        "policy below",
    ),
    "system message inserted": (
        chat(("system", SYS), ("user", "hi"), ("assistant", "yo")),
        chat(("system", SYS), ("user", "hi"), ("system", "Be brief."), ("assistant", "yo")),
        ON,
        BreakCause.SYSTEM_PROMPT,
        "system|>\nBe brief",
    ),
    "completion prompt": (
        {"prompt": "Once upon a time there was"},
        {"prompt": "Once upon a day there was"},
        ON,
        BreakCause.OTHER,
        "day there",
    ),
}


@pytest.mark.parametrize(
    ("previous", "current", "config", "cause", "at"), CASES.values(), ids=list(CASES)
)
def test_causes(
    previous: dict[str, Any],
    current: dict[str, Any],
    config: RewriteConfig | None,
    cause: BreakCause,
    at: str,
) -> None:
    before, after = _prompt(previous, config), _prompt(current, config)
    found = EXPLAINER.explain(before, after)
    assert found is not None
    assert found.cause is cause
    assert after.text[found.char_offset :].startswith(at), after.text[found.char_offset :][:40]
    assert before.text[: found.char_offset] == after.text[: found.char_offset]
    assert found.token_offset == estimate_tokens(after.text[: found.char_offset])
    assert found.previous_chars == before.length
    assert found.header_value() == f"offset={found.token_offset}; cause={cause.value}"


# id -> (previous, current)
NO_BREAK: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "same prompt": (chat(("system", SYS), ("user", "hi")), chat(("system", SYS), ("user", "hi"))),
    "turns appended": (
        chat(("system", SYS), ("user", "hi"), tools=T1),
        chat(("system", SYS), ("user", "hi"), ("assistant", "yo"), ("user", "x"), tools=T1),
    ),
    "timestamp moved by the rewrite (system message)": (
        chat(("system", f"{SYS} Now 2026-11-21."), ("user", "hi")),
        chat(("system", f"{SYS} Now 2026-11-21."), ("user", "hi"), ("assistant", "a")),
    ),
}


@pytest.mark.parametrize(("previous", "current"), NO_BREAK.values(), ids=list(NO_BREAK))
def test_no_break(previous: dict[str, Any], current: dict[str, Any]) -> None:
    assert EXPLAINER.explain(_prompt(previous, ON), _prompt(current, ON)) is None


def test_an_empty_prompt_after_a_real_one_is_explained() -> None:
    # Found by the fuzz test: "prompt": [] serializes to no segment at all.
    found = EXPLAINER.explain(
        _prompt({"prompt": "Once upon a time"}, ON), _prompt({"prompt": []}, ON)
    )
    assert found is not None
    assert (found.char_offset, found.cause) == (0, BreakCause.OTHER)
    assert EXPLAINER.explain(_prompt({"prompt": []}, ON), _prompt({"prompt": "x"}, ON)) is None


def test_rewrite_moves_the_break_after_the_stable_system_text() -> None:
    previous = chat(("system", f"Now 2026-11-21T14:03:07Z. {SYS}"), ("user", "hi"))
    current = chat(("system", f"Now 2026-11-21T14:05:00Z. {SYS}"), ("user", "hi"))
    off = EXPLAINER.explain(_prompt(previous, None), _prompt(current, None))
    on = EXPLAINER.explain(_prompt(previous, ON), _prompt(current, ON))
    assert off is not None
    assert on is not None
    assert on.char_offset > off.char_offset + len(SYS)
    assert on.reused_fraction > off.reused_fraction


def test_token_counter_and_cut_previous() -> None:
    explainer = PrefixExplainer(ON.matcher, count_tokens=lambda text: len(text.split()))
    previous = serialize(chat(("system", SYS), ("user", "alpha beta gamma")))
    current = serialize(chat(("system", SYS), ("user", "alpha beta delta")))
    found = explainer.explain(previous, current)
    assert found is not None
    assert found.token_offset == len(current.text[: found.char_offset].split())
    assert explainer.explain(previous.cut(20), current) is None  # the break is past the kept text
    assert explainer.explain(previous.cut(0), current) is None


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [("", "", 0), ("abc", "abd", 2), ("abc", "abcdef", 3), ("abcdef", "abc", 3), ("x", "y", 0)],
)
def test_common_prefix_length(a: str, b: str, expected: int) -> None:
    assert common_prefix_length(a, b) == expected


@pytest.mark.parametrize("at", [0, 1, 4095, 4096, 4097, 9000, 12287])
def test_common_prefix_length_long(at: int) -> None:
    a = "x" * 12288
    assert common_prefix_length(a, a[:at] + "y" + a[at + 1 :]) == at
