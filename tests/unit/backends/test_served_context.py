"""Reading a backend's served context length from its ``/v1/models`` answer, by table."""

from __future__ import annotations

import orjson
import pytest

from gateway.backends.served_context import served_context


def models(*cards: dict[str, object]) -> bytes:
    return orjson.dumps({"object": "list", "data": list(cards)})


CASES = {
    "vLLM's card": (models({"id": "m", "max_model_len": 32768}), 32768),
    "the served model among others": (
        models({"id": "a", "max_model_len": 4096}, {"id": "m", "max_model_len": 8192}),
        8192,
    ),
    "the only card, another name (TGI serves any)": (
        models({"id": "x", "max_model_len": 2048}),
        2048,
    ),
    "two cards, neither the model's": (
        models({"id": "a", "max_model_len": 1}, {"id": "b", "max_model_len": 2}),
        None,
    ),
    "no field (OpenAI, llama.cpp)": (models({"id": "m", "owned_by": "me"}), None),
    "not a number": (models({"id": "m", "max_model_len": "32k"}), None),
    "a boolean": (models({"id": "m", "max_model_len": True}), None),
    "zero": (models({"id": "m", "max_model_len": 0}), None),
    "not JSON": (b"<html>", None),
    "no data": (b'{"object": "list"}', None),
    "a list": (b"[1, 2]", None),
}


@pytest.mark.parametrize(("body", "tokens"), CASES.values(), ids=CASES)
def test_served_context(body: bytes, tokens: int | None) -> None:
    assert served_context(body, "m") == tokens
