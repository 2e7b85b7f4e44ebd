from __future__ import annotations

from typing import Any

from gateway.cache.store.cache_keys import request_keys
from gateway.cache.store.eligibility import cacheable_request, storable_answer


def _chat(text: str, **extra: Any) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": text}], **extra}


def test_transport_fields_do_not_change_keys() -> None:
    a = request_keys("chat", "fast", _chat("hi", temperature=0), "Bearer k")
    b = request_keys("chat", "fast", _chat("hi", temperature=0, stream=True, user="u"), "Bearer k")
    assert a == b
    assert a.query == "hi"


def test_scope_separates_tenants_models_system_prompts_and_sampling() -> None:
    base = request_keys("chat", "fast", _chat("hi", temperature=0), "Bearer a")
    others = [
        request_keys("chat", "fast", _chat("hi", temperature=0), "Bearer b"),
        request_keys("chat", "smart", _chat("hi", temperature=0), "Bearer a"),
        request_keys("chat", "fast", _chat("hi", temperature=0, top_p=0.5), "Bearer a"),
        request_keys("chat", "fast", _chat("hi", temperature=0, max_tokens=4000), "Bearer a"),
        request_keys(
            "chat",
            "fast",
            {
                "messages": [
                    {"role": "system", "content": "Be terse."},
                    {"role": "user", "content": "hi"},
                ],
                "temperature": 0,
            },
            "Bearer a",
        ),
        request_keys("chat", "fast", _chat("hi", temperature=0, tools=[{"x": 1}]), "Bearer a"),
    ]
    assert all(o.scope != base.scope and o.exact != base.exact for o in others)


def test_same_scope_different_question() -> None:
    a = request_keys("chat", "fast", _chat("hi", temperature=0), None)
    b = request_keys("chat", "fast", _chat("hello", temperature=0), None)
    assert a.scope == b.scope
    assert a.exact != b.exact


def test_non_text_prompts_are_exact_only() -> None:
    parts = [{"type": "text", "text": "hi"}]
    assert request_keys("chat", "f", _chat(parts), None).query is None  # type: ignore[arg-type]
    assert request_keys("completions", "f", {"prompt": [1, 2]}, None).query is None
    assert request_keys("completions", "f", {"prompt": "Once"}, None).query == "Once"


def test_only_deterministic_requests() -> None:
    assert cacheable_request({"temperature": 0}, any_temperature=False) is None
    assert cacheable_request({}, any_temperature=False) == "nondeterministic"
    assert cacheable_request({"temperature": 0.7}, any_temperature=True) is None
    assert cacheable_request({"temperature": 0, "n": 2}, any_temperature=False) == "n"
    assert cacheable_request({"temperature": 0, "logprobs": True}, any_temperature=False)


def test_only_finished_text_answers_are_stored() -> None:
    def answer(finish: str, **message: Any) -> dict[str, Any]:
        msg = {"role": "assistant", "content": "x", **message}
        return {"choices": [{"index": 0, "message": msg, "finish_reason": finish}]}

    assert storable_answer(answer("stop"))
    assert not storable_answer(answer("length"))
    assert not storable_answer(answer("stop", tool_calls=[{"id": "1"}]))
    assert not storable_answer(answer("tool_calls"))
