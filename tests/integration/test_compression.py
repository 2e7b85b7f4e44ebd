"""Context compression through a real gateway, fake upstreams and the openai SDK.

A pool ``main`` with a small context window compresses long conversations; a pool
``summarizer`` (its own fake upstream, whose answer each test scripts) writes summaries.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx2 as httpx
import openai
import pytest

from gateway.app import build_app
from gateway.classify import EstimateCounter
from gateway.policy import load_policy_text
from gateway.runtime.parts import Gateway
from loadtests.kit.fake_upstream import FakeConfig, FakeLog, build_fake
from tests.support.servers import Served, serve, serve_app

FACTS = "Noted: Alice Smith ordered 42 crates, order ORD-7, delivery on 2026-12-01."
GOOD_SUMMARY = "Alice Smith ordered 42 crates (order ORD-7), to be delivered on 2026-12-01."
LOSSY_SUMMARY = "Alice Smith ordered crates (order ORD-7), to be delivered on 2026-12-01."
VOCABULARY = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
]


def _filler(seed: int, words: int = 60) -> str:
    return " ".join(VOCABULARY[(seed * 7 + i * 5) % len(VOCABULARY)] for i in range(words))


def long_chat(turns: int = 12) -> list[dict[str, str]]:
    messages = [
        {"role": "system", "content": "You are the order desk assistant."},
        {"role": "user", "content": "I want to place an order. " + _filler(0)},
        {"role": "assistant", "content": FACTS + " " + _filler(1)},
    ]
    for t in range(2, turns):
        messages.append({"role": "user", "content": _filler(2 * t)})
        messages.append({"role": "assistant", "content": _filler(2 * t + 1)})
    messages.append({"role": "user", "content": "How many crates did I order?"})
    return messages


def _policy(main: str, summarizer: str, compression: str) -> str:
    return f"""
backends:
  - {{name: main-0, url: "{main}", model: fake-model, pool: main}}
  - {{name: summ-0, url: "{summarizer}", model: fake-model, pool: summarizer}}
models:
  chat: {{pool: main}}
pools:
  main:
    max_context: 1200
    compression: {compression}
"""


COMPRESSING = "{enabled: true, keep_last_turns: 2, summary: {enabled: true, pool: summarizer}}"


@dataclass
class Setup:
    client: openai.OpenAI
    main: FakeLog
    summarizer: FakeLog
    served: Served
    gateway: Gateway

    def ask(self, messages: list[dict[str, str]], **headers: str) -> Any:
        return self.client.chat.completions.with_raw_response.create(
            model="chat",
            messages=messages,
            max_tokens=50,
            extra_headers=headers,  # type: ignore[arg-type]
        )

    def metrics(self) -> str:
        return httpx.get(self.served.url + "/metrics").text

    def settle(self) -> None:
        """Wait, on the gateway's loop, until no summary is being written."""
        summaries = self.gateway.summaries
        assert summaries is not None
        self.served.call(summaries.wait_idle)


@contextmanager
def running(
    compression: str = COMPRESSING, summary: str = GOOD_SUMMARY, summary_status: int | None = None
) -> Iterator[Setup]:
    main_log, summary_log = FakeLog(), FakeLog()
    fast: dict[str, Any] = {"ttft_s": 0.001, "tokens": 3, "itl_s": 0.0}
    writer = FakeConfig(**fast, content=summary, fail_status=summary_status)
    with (
        serve(build_fake(FakeConfig(**fast), main_log)) as main,
        serve(build_fake(writer, summary_log)) as summ,
    ):
        app = build_app(load_policy_text(_policy(main, summ, compression)))
        with serve_app(app) as served:
            client = openai.OpenAI(
                base_url=served.url + "/v1", api_key="unused", max_retries=0, timeout=10
            )
            yield Setup(client, main_log, summary_log, served, app.state.gateway)


def test_a_long_conversation_is_truncated_and_marked() -> None:
    chat = long_chat()
    before = EstimateCounter().count_messages(chat)
    assert before > 1200
    with running(compression="{enabled: true, keep_last_turns: 2}") as setup:
        raw = setup.ask(chat)
        metrics = setup.metrics()
    assert raw.parse().choices[0].message.content
    header = raw.headers["x-gateway-compressed"]
    assert header.startswith("method=truncated; dropped=")
    sent = setup.main.bodies[-1]["messages"]
    assert sent[:2] == chat[:2]
    assert sent[2]["role"] == "assistant"
    assert sent[2]["content"].startswith("[Gateway note: ")
    assert sent[-5:] == chat[-5:]
    after = EstimateCounter().count_messages(sent)
    assert header.endswith(f"tokens={before}->{after}")
    assert after <= 1200 - 50
    assert 'gateway_compressions_total{method="truncated",pool="main"} 1.0' in metrics
    assert f'gateway_compression_saved_tokens_total{{pool="main"}} {before - after}.0' in metrics


def test_short_conversations_pass_untouched() -> None:
    chat = long_chat(turns=3)
    with running() as setup:
        raw = setup.ask(chat)
    assert "x-gateway-compressed" not in raw.headers
    assert setup.main.bodies[-1]["messages"] == chat


@pytest.mark.parametrize(
    ("compression", "headers"),
    [("{enabled: false}", {}), (COMPRESSING, {"x-gateway-rewrite": "off"})],
    ids=["compression off", "client opted out"],
)
def test_without_compression_the_request_gets_the_context_400(
    compression: str, headers: dict[str, str]
) -> None:
    chat = long_chat()
    with running(compression=compression) as setup, pytest.raises(openai.BadRequestError) as info:
        setup.ask(chat, **headers)
    assert info.value.code == "context_length_exceeded"
    assert "maximum context length is 1200 tokens" in info.value.message
    tokens = EstimateCounter().count_messages(chat)
    assert f"about {tokens} in the messages" in info.value.message
    assert not setup.main.bodies


def test_a_summary_written_in_the_background_replaces_the_marker() -> None:
    chat = long_chat()
    session = {"x-gateway-session": "conv-1"}
    with running() as setup:
        first = setup.ask(chat, **session)
        setup.settle()
        second = setup.ask(chat, **session)
        other_session = setup.ask(chat, **{"x-gateway-session": "conv-2"})
        setup.settle()
        metrics = setup.metrics()
    assert first.headers["x-gateway-compressed"].startswith("method=truncated;")
    asked = setup.summarizer.bodies[0]
    assert asked["max_tokens"] == 512
    assert FACTS in asked["messages"][1]["content"]
    assert second.headers["x-gateway-compressed"].startswith("method=summary;")
    note = setup.main.bodies[1]["messages"][2]["content"]
    assert note.startswith("[Gateway note: summary of ")
    assert note.endswith(GOOD_SUMMARY)
    assert setup.main.bodies[1]["messages"][3:] == setup.main.bodies[0]["messages"][3:]
    assert other_session.headers["x-gateway-compressed"].startswith("method=truncated;")
    assert 'gateway_compression_summaries_total{result="stored"} 2.0' in metrics
    assert 'gateway_requests_total{backend="summ-0",cache="bypass",model="gateway-internal"' in (
        metrics
    )


def test_a_summary_that_drops_a_number_is_refused() -> None:
    chat = long_chat()
    session = {"x-gateway-session": "conv-1"}
    with running(summary=LOSSY_SUMMARY) as setup:
        setup.ask(chat, **session)
        setup.settle()
        again = setup.ask(chat, **session)
        metrics = setup.metrics()
    assert again.headers["x-gateway-compressed"].startswith("method=truncated;")
    assert LOSSY_SUMMARY not in str(setup.main.bodies[1]["messages"])
    assert len(setup.summarizer.bodies) == 1  # the refusal is remembered
    assert "gateway_compression_summary_check_failures_total 1.0" in metrics
    assert 'gateway_compression_summaries_total{result="check_failed"} 1.0' in metrics


def test_a_growing_conversation_extends_its_summary() -> None:
    session = {"x-gateway-session": "conv-1"}
    methods = []
    with running() as setup:
        for turns in range(12, 20):
            answer = setup.ask(long_chat(turns), **session)
            methods.append(answer.headers["x-gateway-compressed"].split(";")[0])
            setup.settle()
    # Each step of the cut first reuses the earlier summary for what it covers, then the
    # extended summary arrives: the middle is never lost after the first request.
    assert methods[0] == "method=truncated"
    assert set(methods[1:]) == {"method=summary", "method=partial_summary"}
    asked = [body["messages"][1]["content"] for body in setup.summarizer.bodies]
    assert all(text.startswith(f"Summary so far:\n{GOOD_SUMMARY}") for text in asked[1:])
    partial = next(
        body["messages"][2]["content"]
        for body, method in zip(setup.main.bodies, methods, strict=True)
        if method == "method=partial_summary"
    )
    assert partial.startswith("[Gateway note: summary of the first ")
    assert partial.endswith(GOOD_SUMMARY)
    cuts = {tuple(m["content"] for m in body["messages"][3:5]) for body in setup.main.bodies}
    assert len(cuts) < len(setup.main.bodies) - 1  # requests shared their compressed prefix


def test_a_failing_summary_pool_never_affects_requests() -> None:
    chat = long_chat()
    session = {"x-gateway-session": "conv-1"}
    with running(summary_status=500) as setup:
        first = setup.ask(chat, **session)
        setup.settle()
        second = setup.ask(chat, **session)
        setup.settle()
        metrics = setup.metrics()
    for answer in (first, second):
        assert answer.headers["x-gateway-compressed"].startswith("method=truncated;")
    assert 'gateway_compression_summaries_total{result="error"} 2.0' in metrics  # not cached
