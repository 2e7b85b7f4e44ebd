"""The comparison text of a prompt and its segments."""

from __future__ import annotations

from gateway.rewrite import serialize
from tests.unit.rewrite.helpers import chat, tool


def test_chat_layout_and_segments() -> None:
    body = chat(
        ("system", "S"),
        ("user", [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {}}]),
        ("assistant", None),
        tools=[tool("b"), tool("a")],
    )
    body["messages"][2]["tool_calls"] = [{"id": "call_1"}]
    prompt = serialize(body)
    lines = prompt.text.split("\n")
    assert lines[:3] == ["<|system|>", "S", "<|tools|>"]
    assert lines[3].startswith('{"type":"function","function":{"name":"b"')
    assert lines[5:7] == ["<|user|>", "look"]
    assert lines[7].startswith("<|image_url:")
    assert len(lines[7]) == len("<|image_url:|>") + 16
    assert lines[8:10] == ["<|assistant|>", '<|meta|>{"tool_calls":[{"id":"call_1"}]}']
    assert prompt.roles == ("system", "tools", "user", "assistant")
    assert [prompt.text[s : s + 3] for s in prompt.starts] == ["<|s", "<|t", "<|u", "<|a"]
    assert prompt.segment(1)[2] == "tools"
    assert prompt.segment_index(prompt.starts[2]) == 2
    assert prompt.segment_index(len(prompt.text) + 5) == 3
    assert not prompt.truncated
    assert prompt.length == len(prompt.text)


def test_appending_turns_extends_the_text() -> None:
    first = serialize(chat(("system", "S"), ("user", "a"), tools=[tool("t")]))
    second = serialize(
        chat(("system", "S"), ("user", "a"), ("assistant", "b"), ("user", "c"), tools=[tool("t")])
    )
    assert second.text.startswith(first.text)
    assert first.digest != second.digest
    no_system = serialize(chat(("user", "a"), tools=[tool("t")]))
    assert no_system.roles == ("tools", "user")
    only_system = serialize(chat(("system", "S"), tools=[tool("t")]))
    assert only_system.roles == ("system", "tools")


def test_completion_prompts() -> None:
    assert serialize({"prompt": "p"}).text == "<|prompt|>\np\n"
    assert serialize({"prompt": ["a", "b"]}).roles == ("prompt", "prompt")
    assert serialize({"prompt": [1, 2]}).text == "<|prompt|>\n[1,2]\n"


def test_cut_keeps_digest_and_length() -> None:
    prompt = serialize(chat(("system", "S" * 50), ("user", "u" * 50)))
    cut = prompt.cut(20)
    assert cut.text == prompt.text[:20]
    assert cut.truncated
    assert cut.length == prompt.length
    assert cut.digest == prompt.digest
    assert cut.roles == ("system",)
    assert prompt.cut(10_000) is prompt
    assert prompt.cut(0).roles == ()


def test_odd_values_still_serialise() -> None:
    prompt = serialize({"messages": ["not a message", {"role": "user", "content": {"x": 1}}]})
    assert prompt.roles == ("other", "user")
    assert serialize({"messages": [{"role": "user", "content": {1: 2}}]}).text.startswith(
        "<|user|>"
    )
