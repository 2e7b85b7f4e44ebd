"""The demo as the tools people judge it with see it: one ``latency-gateway demo`` process (its
simulated vLLM fleet behind it), driven by guidellm's recorded requests, the openai SDK
(tool calls whole and streamed, JSON mode, structured outputs, the Responses API with
``responses.stream().get_final_response()``) and LangChain (``bind_tools``,
``with_structured_output``), each unmodified.

guidellm itself installs CUDA torch (about 6 GB), too much for CI: its requests of a default
``guidellm run`` (``/health``, ``/v1/models``, streamed chats with ``stream_options`` and
``ignore_eos``), recorded at the wire, are replayed here in order, and its answers read as
guidellm reads them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import jsonschema
import openai
import pytest
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from pydantic import BaseModel

from loadtests.kit.ports import free_port
from tests.support.processes import gateway_process, read_until, wait_ready

GUIDELLM = Path(__file__).resolve().parents[1] / "data" / "guidellm_requests.jsonl"
WEATHER_PARAMETERS = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}},
    "required": ["city", "unit"],
    "additionalProperties": False,
}
WEATHER = {"type": "function", "function": {"name": "weather", "parameters": WEATHER_PARAMETERS}}
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]


class Person(BaseModel):
    """A person."""

    name: str
    age: int
    tags: list[str]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    where = tmp_path_factory.mktemp("demo")
    with gateway_process(["demo", "--port", str(port), "--speed", "20"], cwd=where) as proc:
        read_until(proc, "Ctrl-C stops")
        url = f"http://127.0.0.1:{port}"
        wait_ready(url, proc)
        yield url


@pytest.fixture
def client(demo: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=demo + "/v1", api_key="demo", max_retries=0)


def _sse(raw: str) -> list[dict[str, Any]]:
    data = [line.removeprefix("data: ") for line in raw.splitlines() if line.startswith("data: ")]
    assert data[-1] == "[DONE]"
    return [json.loads(d) for d in data[:-1]]


def test_guidellm_default_run_requests(demo: str) -> None:
    rows = [json.loads(line) for line in GUIDELLM.read_text().splitlines()]
    with httpx.Client(base_url=demo, timeout=60) as http:
        for row in rows:
            answer = http.request(
                row["method"], row["path"], headers=row["headers"], content=row["body"]
            )
            assert answer.status_code == 200, (row["path"], answer.text)
            if row["path"] == "/v1/models":
                assert answer.json()["data"][0]["id"] == "auto"  # guidellm's model
            if row["method"] != "POST":
                continue
            sent = json.loads(row["body"])
            chunks = _sse(answer.text)
            text = "".join(
                c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"]
            )
            assert text
            usage = chunks[-1]["usage"]  # stream_options.include_usage
            assert usage["completion_tokens"] == sent["max_completion_tokens"]  # ignore_eos
            assert usage["prompt_tokens"] > 0


def test_tool_calls_whole_and_streamed(client: openai.OpenAI) -> None:
    whole = client.chat.completions.create(model="fast", messages=ASK, tools=[WEATHER])  # type: ignore[list-item]
    choice = whole.choices[0]
    assert choice.finish_reason == "tool_calls"
    [call] = choice.message.tool_calls or []
    assert call.function.name == "weather"  # type: ignore[union-attr]
    jsonschema.validate(json.loads(call.function.arguments), WEATHER_PARAMETERS)  # type: ignore[union-attr]
    assert whole.usage is not None
    assert whole.usage.completion_tokens > 0
    stream = client.chat.completions.create(
        model="smart",
        messages=ASK,
        tools=[WEATHER],  # type: ignore[list-item]
        stream=True,
        stream_options={"include_usage": True},
    )
    arguments, names, finish, usage = "", [], None, None
    for chunk in stream:
        if not chunk.choices:
            usage = chunk.usage
            continue
        for delta in chunk.choices[0].delta.tool_calls or []:
            assert delta.function is not None
            names.append(delta.function.name)
            arguments += delta.function.arguments or ""
        finish = chunk.choices[0].finish_reason or finish
    assert names[0] == "weather"
    assert finish == "tool_calls"
    jsonschema.validate(json.loads(arguments), WEATHER_PARAMETERS)
    assert usage is not None
    assert usage.completion_tokens == len(names)
    answered = client.chat.completions.create(
        model="fast",
        messages=[
            *ASK,
            {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
            {"role": "tool", "tool_call_id": call.id, "content": "sunny, 21 C"},
        ],  # type: ignore[list-item]
        tools=[WEATHER],  # type: ignore[list-item]
    )
    assert answered.choices[0].finish_reason == "stop"  # the agent loop ends
    assert answered.choices[0].message.content


def test_json_mode_and_structured_outputs(client: openai.OpenAI) -> None:
    mode = client.chat.completions.create(
        model="fast", messages=ASK, response_format={"type": "json_object"}
    )
    assert isinstance(json.loads(mode.choices[0].message.content or ""), dict)
    parsed = client.chat.completions.parse(model="smart", messages=ASK, response_format=Person)
    person = parsed.choices[0].message.parsed
    assert isinstance(person, Person)
    assert person.tags


def test_responses_api_completes_and_streams(client: openai.OpenAI) -> None:
    reply = client.responses.create(model="smart", input="Explain KV caches in one line.")
    assert reply.status == "completed"
    assert reply.output_text
    assert reply.usage is not None
    assert reply.usage.output_tokens > 0
    with client.responses.stream(model="fast", input="Explain KV caches.") as stream:
        final = stream.get_final_response()
    assert final.status == "completed"
    assert final.output_text
    limited = client.responses.create(model="fast", input="Hi", max_output_tokens=4)
    assert limited.status == "incomplete"
    assert limited.incomplete_details is not None
    assert limited.incomplete_details.reason == "max_output_tokens"
    tools = [{"type": "function", "name": "weather", "parameters": WEATHER_PARAMETERS}]
    with client.responses.stream(model="fast", input="Weather?", tools=tools) as stream:  # type: ignore[arg-type]
        called = stream.get_final_response()
    [item] = called.output
    assert item.type == "function_call"
    assert item.name == "weather"
    jsonschema.validate(json.loads(item.arguments), WEATHER_PARAMETERS)
    structured = client.responses.parse(model="smart", input="A person.", text_format=Person)
    assert isinstance(structured.output_parsed, Person)


@tool
def weather(city: str, unit: str) -> str:
    """The weather in a city."""
    return "sunny"


def test_langchain_bind_tools_and_structured_output(demo: str) -> None:
    llm = ChatOpenAI(base_url=demo + "/v1", api_key="demo", model="fast", max_retries=0)  # type: ignore[arg-type]
    message = llm.bind_tools([weather]).invoke("What is the weather in Paris?")
    [call] = message.tool_calls  # type: ignore[attr-defined]
    assert call["name"] == "weather"
    assert set(call["args"]) == {"city", "unit"}
    chunks = list(llm.bind_tools([weather]).stream("Weather?"))
    merged = chunks[0]
    for chunk in chunks[1:]:
        merged += chunk  # type: ignore[assignment]
    assert [c["name"] for c in merged.tool_calls] == ["weather"]  # type: ignore[attr-defined]
    for method in ("json_schema", "function_calling"):
        person = llm.with_structured_output(Person, method=method).invoke("A person.")  # type: ignore[arg-type]
        assert isinstance(person, Person), method
