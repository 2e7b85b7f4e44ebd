"""The TGI personality as huggingface_hub's InferenceClient sees it: a real uvicorn server on
127.0.0.1 driven by the real client (chat and text generation, streaming and not)."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from typing import Any

import httpx2 as httpx
import pytest
from huggingface_hub import InferenceClient, constants
from huggingface_hub.errors import ValidationError

from loadtests.kit.serving import serve
from loadtests.sim.clock import RealClock
from loadtests.sim.profile import load_profile
from loadtests.sim.replica import EngineKind, build_replica
from loadtests.sim.server import build_app

MODEL = "Qwen/Qwen2.5-1.5B-Instruct"


def _url(kind: EngineKind) -> Iterator[str]:
    replica = build_replica(
        load_profile("qwen2.5-1.5b-h100"), kind=kind, served_model=MODEL, clock=RealClock(200.0)
    )
    with serve(build_app(replica)) as url:
        yield url


@pytest.fixture
def tgi_url(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """huggingface_hub's offline mode (read once, at import) refuses every request, even to an
    explicit base URL; lift it for this test and refuse any connection off the loopback
    instead, so the client provably reaches nothing but the simulator."""
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    connect = socket.socket.connect

    def loopback_only(sock: socket.socket, address: Any) -> None:
        host = address[0] if isinstance(address, tuple) else address
        assert ipaddress.ip_address(host).is_loopback, f"connection to {address!r}"
        connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", loopback_only)
    yield from _url("tgi")


@pytest.fixture
def vllm_url() -> Iterator[str]:
    yield from _url("vllm")


@pytest.mark.parametrize("model", [None, "tgi", "some/other-model"])
def test_chat_completion_for_any_model_name(tgi_url: str, model: str | None) -> None:
    client = InferenceClient(base_url=tgi_url, timeout=10)
    out = client.chat_completion(
        [{"role": "user", "content": "Hello"}], model=model, max_tokens=5, seed=1
    )
    assert out.choices[0].message.role == "assistant"
    assert out.choices[0].message.content
    assert out.usage.completion_tokens <= 5
    chunks = list(
        client.chat_completion(
            [{"role": "user", "content": "Hello"}], model=model, max_tokens=5, seed=1, stream=True
        )
    )
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert streamed == out.choices[0].message.content


def test_text_generation_through_post_root(tgi_url: str) -> None:
    client = InferenceClient(model=tgi_url, timeout=10)
    text = client.text_generation("What is TGI?", max_new_tokens=6, seed=2)
    assert isinstance(text, str)
    assert text
    detailed = client.text_generation("What is TGI?", max_new_tokens=6, seed=2, details=True)
    assert detailed.generated_text == text
    assert detailed.details is not None
    assert detailed.details.generated_tokens == len(detailed.details.tokens) <= 6
    assert detailed.details.finish_reason in {"length", "eos_token"}
    full = client.text_generation("What is TGI?", max_new_tokens=6, seed=2, return_full_text=True)
    assert full == "What is TGI?" + text


def test_text_generation_stream_through_post_root(tgi_url: str) -> None:
    client = InferenceClient(model=tgi_url, timeout=10)
    whole = client.text_generation("Stream it", max_new_tokens=4, seed=3)
    tokens = list(client.text_generation("Stream it", max_new_tokens=4, seed=3, stream=True))
    assert "".join(tokens) == whole
    events = list(
        client.text_generation("Stream it", max_new_tokens=4, seed=3, stream=True, details=True)
    )
    assert events[-1].generated_text == whole
    assert events[-1].details is not None
    assert events[-1].details.generated_tokens == len(events)


def test_post_root_answers_a_list_and_refuses_bad_input(tgi_url: str) -> None:
    body = {"inputs": "hi", "parameters": {"max_new_tokens": 2}}
    out = httpx.post(tgi_url + "/", json=body, timeout=10)
    assert out.status_code == 200
    assert [set(item) for item in out.json()] == [{"generated_text"}]
    bad = httpx.post(tgi_url + "/", json={"inputs": ""}, timeout=10)
    assert bad.status_code == 422
    assert bad.json()["error_type"] == "validation"
    client = InferenceClient(model=tgi_url, timeout=10)
    # The client reads TGI's error shape into its own exception type.
    with pytest.raises(ValidationError, match="inputs"):
        client.text_generation("", max_new_tokens=2)


def test_vllm_personality_still_refuses_unknown_models(vllm_url: str) -> None:
    body = {"model": "other", "messages": [{"role": "user", "content": "hi"}]}
    out = httpx.post(vllm_url + "/v1/chat/completions", json=body, timeout=10)
    assert out.status_code == 404
    assert httpx.post(vllm_url + "/", json={"inputs": "hi"}, timeout=10).status_code == 404
