"""Volatile fragments: the formats found, the near misses left alone, and the fast scan."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.rewrite import volatile
from gateway.rewrite.volatile import BUILTIN_KINDS, NamedPattern, build_matcher

MATCHER = build_matcher(BUILTIN_KINDS)

# text -> [(kind, fragment)]
FOUND: dict[str, list[tuple[str, str]]] = {
    "Now: 2026-11-21T14:03:07Z.": [("timestamp", "2026-11-21T14:03:07Z")],
    "at 2026-11-21T14:03:07.123+01:00 ok": [("timestamp", "2026-11-21T14:03:07.123+01:00")],
    "at 2026-11-21 14:03:07 today": [("timestamp", "2026-11-21 14:03:07")],
    "date 2026-11-21.": [("timestamp", "2026-11-21")],
    "2026/11/21 14:03": [("timestamp", "2026/11/21 14:03")],
    "Sat, 21 Nov 2026 14:03:07 +0000": [("timestamp", "Sat, 21 Nov 2026 14:03:07 +0000")],
    "on 21 November 2026 we": [("timestamp", "21 November 2026")],
    "Today is Nov 21, 2026.": [("timestamp", "Nov 21, 2026")],
    "Saturday, November 21st, 2026 at 2:03 PM": [
        ("timestamp", "Saturday, November 21st, 2026 at 2:03 PM")
    ],
    "(Nov. 21, 2026)": [("timestamp", "Nov. 21, 2026")],
    "clock 14:03:07 UTC": [("timestamp", "14:03:07 UTC")],
    "time: 1795298300": [("epoch", "1795298300")],
    "at time: 1795298300.": [("epoch", "1795298300")],
    '"ts": 1795298300123,': [("epoch", "1795298300123")],
    "current_time=1795298300": [("epoch", "1795298300")],
    "id 3f2a1c4e-1b2c-4d5e-8f90-0123456789ab!": [("uuid", "3f2a1c4e-1b2c-4d5e-8f90-0123456789ab")],
    "request-id: abc123XYZ": [("request_id", "abc123XYZ")],
    "X-Request-ID: 7f3a": [("request_id", "7f3a")],
    'trace_id="00f0b1"': [("request_id", "00f0b1")],
    "see req_123 ok": [("request_id", "req_123")],
    "request_a1b2c3d4": [("request_id", "request_a1b2c3d4")],
    "Time 2026-11-21T10:00:00Z, req_9ab": [
        ("timestamp", "2026-11-21T10:00:00Z"),
        ("request_id", "req_9ab"),
    ],
}

NOT_FOUND = [
    "version 1.2.3 and 3.11",
    "1795298300 without a key",
    "time: 1795298300.5 seconds",
    "call me at 12:30",
    "step 2024 of 10000",
    "request_handler and request id: abc",  # no digit: not an id
    "GPT-4, H100, x86_64, 3rd, 10x",
    "12026-11-21 and 2026-13-45",
    "May 5 at noon",
    "v2026-11-21",
    "1. first\n2. second",
    "nil 00000000-0000-0000-0000-000000000000x",
]


@pytest.mark.parametrize(("text", "expected"), FOUND.items(), ids=list(FOUND))
def test_formats_found(text: str, expected: list[tuple[str, str]]) -> None:
    assert [(f.kind, f.text) for f in MATCHER.find(text)] == expected
    for fragment in MATCHER.find(text):
        assert text[fragment.start : fragment.end] == fragment.text


@pytest.mark.parametrize("text", NOT_FOUND)
def test_near_misses_left_alone(text: str) -> None:
    assert MATCHER.find(text) == []


def test_kinds_and_causes() -> None:
    only_ids = build_matcher({"uuid", "request_id"})
    assert only_ids.find("2026-11-21 req_123") == [
        volatile.Fragment("request_id", 11, 18, "req_123")
    ]
    assert [MATCHER.cause_of(k) for k in ("timestamp", "epoch", "uuid", "request_id")] == [
        "timestamp",
        "timestamp",
        "id",
        "id",
    ]
    assert MATCHER.cause_of("unknown") == "other"
    assert build_matcher(()).find("2026-11-21") == []
    with pytest.raises(KeyError):
        build_matcher({"dates"})


def test_window_bounds_matches_like_finditer() -> None:
    text = "xx time: 1795298300 yy ab2026-11-21"
    assert [f.text for f in MATCHER.find(text, 3, 19)] == ["1795298300"]
    assert MATCHER.find(text, 9, 19) == []  # the key is before the window
    assert MATCHER.find(text, 0, 15) == []  # the value is cut by the window
    assert MATCHER.find(text, 25) == []  # look-behind still sees the "b" before the window


def test_extra_patterns_merge_without_overlap() -> None:
    import re

    extras = (
        NamedPattern("ticket", re.compile(r"TICKET-\d+"), "id"),
        NamedPattern("spaced", re.compile(r" nonce \w+ ")),
    )
    matcher = build_matcher(BUILTIN_KINDS, extras)
    found = matcher.find("TICKET-42 at 2026-11-21 nonce abc then\nline")
    assert [(f.kind, f.text) for f in found] == [
        ("ticket", "TICKET-42"),
        ("timestamp", "2026-11-21"),
        ("spaced", "nonce abc"),  # trimmed: surrounding spaces stay in the text
    ]
    assert matcher.cause_of("ticket") == "id"


def test_number_dense_text_is_bounded() -> None:
    filler = " ".join(f"row {i}: 1{i:03d} units" for i in range(volatile._MAX_RUNS))
    assert MATCHER.find(filler + " at 2026-11-21") == []  # beyond the examined runs
    assert len(MATCHER.find(filler[:2000] + " at 2026-11-21")) == 1


PIECES = [
    *FOUND,
    *NOT_FOUND,
    *'0123456789 -:/,."_=#TZ+aAbcdefFMNo\n',
    "Nov",
    "May",
    "Sat,",
    "req",
    "id",
    "time",
    "é",
    "🙂",
]


@st.composite
def scan_texts(draw: st.DrawFn) -> str:
    parts = draw(
        st.lists(
            st.one_of(
                st.sampled_from(PIECES),
                st.builds(lambda n: str(uuid.UUID(int=n, version=4)), st.integers(0, 2**128 - 1)),
                st.integers(0, 10**14).map(str),
            ),
            max_size=14,
        )
    )
    return "".join(parts)


@settings(max_examples=300, deadline=None)
@given(scan_texts())
def test_fast_scan_equals_finditer(text: str) -> None:
    scanner = MATCHER.builtin
    assert scanner is not None
    groups = [(m, m.lastgroup or "") for m in scanner.pattern.finditer(text)]
    expected = [(scanner.group_kinds[g], m.start(g), m.group(g)) for m, g in groups]
    assert [(f.kind, f.start, f.text) for f in MATCHER.find(text)] == expected
