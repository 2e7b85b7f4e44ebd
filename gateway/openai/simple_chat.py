"""Recognise a chat request that the request model would accept, without running it.

Validating a chat body with the pydantic model (``parse.ChatRequest``) builds a model instance
and one more per message: the largest single item of a request's parse, and it grows with the
conversation. Most bodies are of one plain shape, and for those the answer is known from a few
type checks.

Algorithm: ``simple_chat`` returns True only when every field the model checks is absent,
null, or of a type and range the model accepts as it is (strict types, as ``orjson`` decodes
them: ``int`` never ``bool``, ``float`` or ``int`` for a bounded number, a NaN fails the range
check); any other field is an extra the model keeps untouched whatever it holds. It returns
False for anything else, including values the model would accept after a conversion (an
integral float for ``max_tokens``) and the shapes it does not look into (a ``stream_options``
other than an object with an optional boolean ``include_usage``): those, and every invalid
body, go through the model, so its errors are the only ones a client sees. So True is never
wrong; False only costs the model's run. ``tests/unit/openai/test_simple_chat.py`` checks the
table of both against the model.
"""

from __future__ import annotations

from typing import Any

# ``parse.Role``'s values.
ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
# Bounded numbers of ``parse._Sampled``: name -> (low, high).
_BOUNDED = (("temperature", 0.0, 2.0), ("top_p", 0.0, 1.0))
# Whole numbers of ``parse._Common`` and ``ChatRequest``: name -> (low, high: None unbounded).
_WHOLE = (("max_tokens", 1, None), ("max_completion_tokens", 1, None), ("n", 1, 128),
          ("seed", None, None))  # fmt: skip


def simple_chat(body: dict[str, Any]) -> bool:
    """Whether ``parse.ChatRequest`` accepts ``body`` as it is (a decoded JSON object)."""
    model = body.get("model")
    if type(model) is not str or not model:
        return False
    stream = body.get("stream")
    if stream is not None and type(stream) is not bool:
        return False
    for name, low, high in _BOUNDED:
        value = body.get(name)
        if value is not None and not (_number(value) and low <= value <= high):
            return False
    for name, least, most in _WHOLE:
        value = body.get(name)
        if value is not None and not _whole(value, least, most):
            return False
    options = body.get("stream_options")
    if options is not None and not _stream_options(options):
        return False
    return _messages(body.get("messages"))


def _number(value: object) -> bool:
    return type(value) is float or type(value) is int


def _whole(value: object, least: int | None, most: int | None) -> bool:
    if type(value) is not int:
        return False
    return (least is None or value >= least) and (most is None or value <= most)


def _stream_options(options: object) -> bool:
    if type(options) is not dict:
        return False
    usage = options.get("include_usage")
    return usage is None or type(usage) is bool


def _messages(messages: object) -> bool:
    if type(messages) is not list or not messages:
        return False
    for message in messages:
        if type(message) is not dict:
            return False
        role = message.get("role")
        if type(role) is not str or role not in ROLES:
            return False
        content = message.get("content")
        if content is None or type(content) is str:
            continue
        if type(content) is not list or any(type(part) is not dict for part in content):
            return False
    return True
