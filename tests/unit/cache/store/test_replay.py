from __future__ import annotations

from typing import Any

from gateway.cache.store.capture import AnswerCapture
from gateway.cache.store.replay import fresh_answer, stream_chunks

STORED = {
    "object": "chat.completion",
    "model": "backend-name",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "The answer is forty two, really."},
            "finish_reason": "stop",
            "logprobs": None,
        }
    ],
    "usage": {"prompt_tokens": 9, "completion_tokens": 7, "total_tokens": 16},
}


def test_fresh_answer_has_new_id_model_and_usage() -> None:
    a = fresh_answer(STORED, model="fast", created=5, prompt_tokens=12)
    b = fresh_answer(STORED, model="fast", created=5, prompt_tokens=12)
    assert a["id"] != b["id"]
    assert a["id"].startswith("chatcmpl-")
    assert a["model"] == "fast"
    assert a["created"] == 5
    assert a["usage"] == {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}
    assert a["choices"] == STORED["choices"]


def test_stream_replays_role_content_finish_usage_done() -> None:
    answer = fresh_answer(STORED, model="fast", created=5, prompt_tokens=12)
    events = list(stream_chunks(answer, include_usage=True))
    assert events[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    text = "".join(e["choices"][0]["delta"].get("content", "") for e in events if e["choices"])
    assert text == "The answer is forty two, really."
    assert events[-2]["choices"][0]["finish_reason"] == "stop"
    assert events[-1]["choices"] == []
    assert events[-1]["usage"]["completion_tokens"] == 7
    assert {e["id"] for e in events} == {answer["id"]}
    assert {e["object"] for e in events} == {"chat.completion.chunk"}
    no_usage = list(stream_chunks(answer, include_usage=False))
    assert all("usage" not in e for e in no_usage)


def test_capture_folds_a_stream_back_into_an_answer() -> None:
    got: list[dict[str, Any]] = []
    capture = AnswerCapture("chat", got.append)
    answer = fresh_answer(STORED, model="fast", created=5, prompt_tokens=12)
    for event in list(stream_chunks(answer, include_usage=True)):
        capture.event(event)
    capture.finish()
    assert got[0]["choices"][0]["message"]["content"] == "The answer is forty two, really."
    assert got[0]["usage"]["completion_tokens"] == 7


def test_capture_refuses_tool_calls_and_truncation() -> None:
    got: list[dict[str, Any]] = []
    capture = AnswerCapture("chat", got.append)
    capture.event({"choices": [{"index": 0, "delta": {"tool_calls": [{"id": "1"}]}}]})
    capture.event({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    capture.finish()
    truncated = AnswerCapture("completions", got.append)
    truncated.event({"choices": [{"index": 0, "text": "x", "finish_reason": "length"}]})
    truncated.finish()
    assert got == []


def test_completions_replay() -> None:
    stored = {
        "object": "text_completion",
        "choices": [{"index": 0, "text": "Once upon", "finish_reason": "stop", "logprobs": None}],
    }
    answer = fresh_answer(stored, model="fast", created=1, prompt_tokens=2)
    assert answer["id"].startswith("cmpl-")
    assert answer["usage"]["completion_tokens"] >= 1
    events = list(stream_chunks(answer, include_usage=False))
    assert "".join(e["choices"][0]["text"] for e in events) == "Once upon"
