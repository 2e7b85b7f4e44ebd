"""Hypothesis strategies for what clients write, and the fields rewriting must not touch.

The content is the kind rewriting used to damage: tabs, trailing spaces and empty TSV
fields, CRLF, blank-line runs, fenced and unfenced code with triple-quoted strings, JSON,
unicode, dates and ids that look volatile, multimodal parts, and tool schemas whose key
order matters.
"""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import strategies as st

PIECES = [
    "2026-11-21T14:03:07Z",
    "quote ticket 3f2a1c4e-1b2c-4d5e-8f90-0123456789ab exactly",
    "req_8f3a2b",
    "time: 1795298300",
    "a\tb\t\t\n",
    "x  ",
    "  ",
    "\t",
    "\n",
    "\r\n",
    "\n\n\n\n",
    "```python\n",
    "```",
    'def f():\n    """doc  \n\n\n  """\n',
    '{"z_last": 1, "a_first": [2, 1]}',
    "é",
    "😀",
    "中文",
    "\u200b",
    "[Context: ",
    "]",
]
TEXT = st.one_of(
    st.lists(st.sampled_from(PIECES), max_size=12).map("".join),
    st.text(max_size=40),
)
_JSON_LEAF = st.one_of(st.none(), st.booleans(), st.integers(-(2**53), 2**53), TEXT)
# Objects keep the order hypothesis draws their keys in: that order is what must survive.
JSON = st.recursive(
    _JSON_LEAF,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=10,
)
PART = st.one_of(
    TEXT.map(lambda t: {"type": "text", "text": t}),
    st.builds(
        lambda url, detail: {"type": "image_url", "image_url": {"url": url, "detail": detail}},
        st.sampled_from(["https://x/y.png  ", "data:image/png;base64,AAAA\n\n\n"]),
        st.sampled_from(["high", "low"]),
    ),
    TEXT.map(lambda t: {"input_audio": {"format": "wav", "data": t}, "type": "input_audio"}),
)
CONTENT = st.one_of(TEXT, st.lists(PART, min_size=1, max_size=3))


def _tool(name: str, properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "parameters": {"type": "object", "properties": properties, "required": []},
        },
    }


TOOLS = st.lists(
    st.builds(
        _tool,
        st.sampled_from(["zeta", "alpha", "m_tool"]),
        st.dictionaries(st.sampled_from(["z_last", "a_first", "b", "é"]), JSON, max_size=3),
    ),
    max_size=3,
)


@st.composite
def _message(draw: st.DrawFn, role: str) -> dict[str, Any]:
    if role == "tool":
        return {"role": role, "tool_call_id": "call_1", "content": draw(TEXT)}
    message: dict[str, Any] = {"role": role, "content": draw(CONTENT)}
    if role == "assistant" and draw(st.booleans()):
        arguments = orjson.dumps(draw(st.dictionaries(st.text(max_size=5), JSON, max_size=2)))
        message["tool_calls"] = [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "zeta", "arguments": arguments.decode()},
            }
        ]
    return message


@st.composite
def chat_bodies(draw: st.DrawFn) -> dict[str, Any]:
    head = draw(st.lists(st.sampled_from(["system", "developer"]), max_size=2))
    turns = draw(st.lists(st.sampled_from(["user", "assistant", "tool"]), min_size=1, max_size=5))
    messages = [{"role": role, "content": draw(CONTENT)} for role in head] + [
        draw(_message(role)) for role in turns
    ]
    body: dict[str, Any] = {"model": "fast", "messages": messages, "max_tokens": 4}
    tools = draw(TOOLS)
    if tools:
        body["tools"] = tools
    return body


PROMPTS = st.one_of(TEXT, st.lists(TEXT, min_size=1, max_size=3))


def completion_bodies() -> st.SearchStrategy[dict[str, Any]]:
    return PROMPTS.map(lambda prompt: {"model": "fast", "prompt": prompt, "max_tokens": 4})


def as_sent(value: Any) -> bytes:
    """A value's JSON bytes, keys in their order: equal bytes means nothing was touched."""
    return orjson.dumps(value)


def turns(body: dict[str, Any]) -> list[bytes]:
    """What users, assistants and tools wrote, in order, each message as bytes."""
    return [as_sent(m) for m in body["messages"] if m.get("role") not in ("system", "developer")]


def protected(body: dict[str, Any]) -> dict[str, bytes]:
    """Every field the default rewrite must forward byte for byte (``model`` is the pool's
    served name upstream, the system prompt is the rewrite's to canonicalise)."""
    fields = {k: as_sent(v) for k, v in body.items() if k not in ("model", "messages")}
    if "messages" in body:
        fields["messages (not system)"] = b"\n".join(turns(body))
    return fields
