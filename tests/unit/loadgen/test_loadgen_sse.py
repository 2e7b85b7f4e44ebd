from __future__ import annotations

import pytest

from loadtests.loadgen.sse import SseEvent, SseParser, Usage


def _feed(lines: list[str]) -> list[SseEvent]:
    parser = SseParser()
    return [e for line in lines if (e := parser.feed(line)) is not None]


def test_content_usage_done() -> None:
    events = _feed(
        [
            ": keep-alive",
            'data: {"choices":[{"delta":{"role":"assistant"}}]}',
            "",
            'data: {"choices":[{"delta":{"content":"Hi"}}]}',
            "",
            'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}',
            "data: [DONE]",
        ]
    )
    assert [e.content for e in events] == ["", "Hi", "", ""]
    assert events[2].usage == Usage(prompt_tokens=3, completion_tokens=1)
    assert events[-1].done


def test_error_object_in_stream() -> None:
    (event,) = _feed(['data: {"error":{"message":"x","type":"overloaded_error"}}'])
    assert event.error == "overloaded_error"


def test_named_error_event() -> None:
    events = _feed(["event: error", 'data: {"detail":"gone"}', "", 'data: {"choices":[]}'])
    assert events[0].error == "error_event"
    assert events[1].error is None


@pytest.mark.parametrize(
    ("line", "error"),
    [("data: {not json", "bad_json"), ("data: [1,2]", "bad_chunk"), ('data: {"error":"x"}', "x")],
)
def test_malformed_payloads_are_errors(line: str, error: str) -> None:
    (event,) = _feed([line])
    assert event.error == error


def test_other_fields_ignored() -> None:
    assert _feed(["id: 3", "retry: 100", "garbage"]) == []


def test_null_content_and_bad_usage() -> None:
    (event,) = _feed(
        ['data: {"choices":[{"delta":{"content":null}}],"usage":{"prompt_tokens":"x"}}']
    )
    assert event.content == ""
    assert event.usage == Usage(prompt_tokens=None, completion_tokens=None)
