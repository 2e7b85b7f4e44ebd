"""The per-session store: explanations, LRU and size bounds, idle expiry."""

from __future__ import annotations

import pytest

from gateway.rewrite import (
    BreakCause,
    MemoryPrefixStore,
    PrefixExplainer,
    RewriteConfig,
    SerializedPrompt,
    serialize,
)
from gateway.rewrite.session import PrefixTracker
from tests.unit.rewrite.helpers import chat

EXPLAINER = PrefixExplainer(RewriteConfig().matcher)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _prompt(*turns: str) -> SerializedPrompt:
    roles = ["user", "assistant"] * len(turns)
    return serialize(chat(("system", "S"), *zip(roles, turns, strict=False)))


def _store(**kwargs: float) -> tuple[MemoryPrefixStore, FakeClock]:
    clock = FakeClock()
    return MemoryPrefixStore(EXPLAINER, clock=clock, **kwargs), clock  # type: ignore[arg-type]


def test_explains_against_the_previous_prompt_of_the_same_session() -> None:
    store, _clock = _store()
    tracker: PrefixTracker = store
    assert tracker.observe("s1", _prompt("a")) is None  # nothing to compare with yet
    assert tracker.observe("s1", _prompt("a", "b", "c")) is None  # an extension
    found = tracker.observe("s1", _prompt("a", "B", "c", "d"))
    assert found is not None
    assert found.cause is BreakCause.EDITED_HISTORY
    assert tracker.observe("s2", _prompt("x")) is None  # another session
    assert len(store) == 2


def test_idle_sessions_expire() -> None:
    store, clock = _store(ttl_s=60)
    store.observe("s1", _prompt("a", "b"))
    clock.now += 59
    assert store.observe("s1", _prompt("x")) is not None  # still there, and touched
    clock.now += 59
    store.observe("s2", _prompt("y"))
    clock.now += 2  # s1 idle 61 s, s2 idle 2 s
    assert store.observe("s1", _prompt("z")) is None
    assert len(store) == 2


def test_least_recently_used_session_goes_first() -> None:
    store, _clock = _store(max_sessions=2)
    store.observe("a", _prompt("1"))
    store.observe("b", _prompt("1"))
    store.observe("a", _prompt("1", "2"))  # a is now the most recent
    store.observe("c", _prompt("1"))  # evicts b
    assert store.observe("b", _prompt("9")) is None
    assert store.observe("c", _prompt("9")) is not None


def test_text_bounds() -> None:
    store, _clock = _store(max_chars=40, max_total_chars=100)
    long_turn = "u" * 200
    store.observe("a", _prompt(long_turn))
    assert store.total_chars == 40
    # the change is past the 40 kept characters: not explained
    assert store.observe("a", _prompt(long_turn[:-1] + "v")) is None
    found = store.observe("a", _prompt("w" + long_turn))  # within them: explained
    assert found is not None
    assert found.char_offset < 40
    for name in "bcd":
        store.observe(name, _prompt(long_turn))
    assert store.total_chars <= 100
    assert len(store) == 2
    store.forget("d")
    store.forget("missing")
    assert len(store) == 1
    assert store.total_chars == 40


@pytest.mark.parametrize(
    "kwargs",
    [{"max_sessions": 0}, {"ttl_s": 0}, {"max_chars": 0}, {"max_chars": 10, "max_total_chars": 5}],
)
def test_invalid_bounds(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="max_sessions"):
        _store(**kwargs)
