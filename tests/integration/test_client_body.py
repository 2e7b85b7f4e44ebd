"""Streams written past the ASGI ``send`` (the gateway's own uvicorn protocol,
``commands/client_body.py``) reach the client as the ASGI path's do, byte for byte: for the
openai SDK, for a client that leaves mid-stream (the upstream is dropped) and for a client that
reads slowly (the gateway waits for it, and nothing is lost or reordered)."""

from __future__ import annotations

import asyncio
import re
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import openai
import pytest

from gateway.app import build_app
from gateway.commands.client_body import ClientBodyProtocol
from gateway.openai.streaming import CLIENT_BODY, ClientBody
from gateway.policy import load_policy_text
from loadtests.kit.fake_upstream import FakeConfig, FakeLog, build_fake
from tests.support.policies import single_pool
from tests.support.raw_http import raw_chat_request, read_until
from tests.support.servers import serve

CHAT = "/v1/chat/completions"
BASE: dict[str, Any] = {"model": "fast", "messages": [{"role": "user", "content": "hi"}]}


@dataclass
class Seen:
    """What the direct path did: body writes past ``send``, and times it was not ready (and
    an event set the first time, for a test thread waiting on the server's)."""

    writes: int = 0
    not_ready: int = 0
    full: threading.Event = field(default_factory=threading.Event)


class _Counted:
    def __init__(self, body: ClientBody, seen: Seen) -> None:
        self._body, self._seen = body, seen

    def ready(self) -> bool:
        ready = self._body.ready()
        if not ready:
            self._seen.not_ready += 1
            self._seen.full.set()
        return ready

    def write(self, chunk: bytes) -> None:
        self._seen.writes += 1
        self._body.write(chunk)


def _counting(seen: Seen) -> type[ClientBodyProtocol]:
    def on_headers_complete(self: ClientBodyProtocol) -> None:
        ClientBodyProtocol.on_headers_complete(self)
        extensions = self.scope.get("extensions")
        if extensions and CLIENT_BODY in extensions:  # type: ignore[operator]
            extensions[CLIENT_BODY] = _Counted(extensions[CLIENT_BODY], seen)  # type: ignore[index]

    def connection_made(self: ClientBodyProtocol, transport: asyncio.Transport) -> None:
        # A small kernel buffer: a client that does not read fills it (and then the
        # transport's) after a few hundred kilobytes, not the megabytes loopback allows.
        transport.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8192)
        ClientBodyProtocol.connection_made(self, transport)

    methods = {"on_headers_complete": on_headers_complete, "connection_made": connection_made}
    return type("Counting", (ClientBodyProtocol,), methods)


@pytest.fixture
def upstream(fake_log: FakeLog) -> Iterator[str]:
    config = FakeConfig(model="fake-model", ttft_s=0.005, tokens=30, itl_s=0.002)
    with serve(build_fake(config, fake_log)) as url:
        yield url


@pytest.fixture
def seen() -> Seen:
    return Seen()


@pytest.fixture
def gateways(upstream: str, seen: Seen) -> Iterator[tuple[str, str]]:
    """The same policy served twice: through the direct path, and through ``send`` only."""
    text = single_pool(upstream)
    with (
        serve(build_app(load_policy_text(text)), http=_counting(seen)) as direct,
        serve(build_app(load_policy_text(text)), http="httptools") as plain,  # uvicorn's own
    ):
        yield direct, plain


def _same(body: bytes) -> bytes:
    # The fake stamps its events with the second they were made in.
    return re.sub(rb'"created":\d+', b'"created":0', body)


def _body(url: str, request: dict[str, Any]) -> bytes:
    with (
        httpx.Client(timeout=30) as client,
        client.stream("POST", url + CHAT, json=request) as response,
    ):
        assert response.status_code == 200
        assert response.headers["transfer-encoding"] == "chunked"
        return b"".join(response.iter_raw())


@pytest.mark.parametrize(
    "request_body",
    [
        {**BASE, "stream": True},
        {**BASE, "stream": True, "stream_options": {"include_usage": True}},
        {"model": "fast", "prompt": "hi", "stream": True},
        {**BASE, "stream": True, "fake": {"tokens": 200, "itl_s": 0}},
    ],
    ids=["chat", "chat-usage", "completions", "chat-burst"],
)
def test_direct_body_is_byte_identical(
    gateways: tuple[str, str], seen: Seen, request_body: dict[str, Any]
) -> None:
    direct, plain = gateways
    url = CHAT if "messages" in request_body else "/v1/completions"
    with httpx.Client(timeout=30) as client:
        bodies = []
        for base in (direct, plain):
            with client.stream("POST", base + url, json=request_body) as response:
                assert response.status_code == 200
                bodies.append(b"".join(response.iter_raw()))
    assert _same(bodies[0]) == _same(bodies[1])
    assert bodies[0].endswith(b"data: [DONE]\n\n")
    if "fake" not in request_body:  # (a burst may arrive whole: then it all leaves with the end)
        assert seen.writes > 0, "the direct path was not taken"


def test_openai_sdk_reads_the_same_stream(gateways: tuple[str, str], seen: Seen) -> None:
    runs = []
    for base in gateways:
        client = openai.OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0, timeout=30)
        stream = client.chat.completions.create(
            model="fast",
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        runs.append([{**chunk.model_dump(), "created": 0} for chunk in stream])
    assert runs[0] == runs[1]
    text = "".join(c["choices"][0]["delta"]["content"] or "" for c in runs[0] if c["choices"])
    assert text.split() == [f"tok{i}" for i in range(30)]
    assert runs[0][-1]["usage"]["completion_tokens"] == 30
    assert seen.writes > 0
    # One connection, several streams: keep-alive state stays right past the direct writes.
    client = openai.OpenAI(base_url=gateways[0] + "/v1", api_key="unused", max_retries=0)
    for _ in range(3):
        chunks = list(client.chat.completions.create(model="fast", messages=BASE["messages"],
                                                     stream=True))  # fmt: skip
        assert chunks[-1].choices[0].finish_reason == "length"


def _raw_request(base: str, body: dict[str, Any], rcvbuf: int | None = None) -> socket.socket:
    return raw_chat_request(base, body, timeout_s=30, rcvbuf=rcvbuf)


def test_client_leaving_mid_stream_drops_the_upstream(
    gateways: tuple[str, str], fake_log: FakeLog, seen: Seen
) -> None:
    body = {**BASE, "stream": True, "fake": {"tokens": 50, "itl_s": 0.5}}
    sock = _raw_request(gateways[0], body)
    read_until(sock, b"tok2")  # past the first token: the direct path is relaying
    sock.close()
    assert fake_log.left.wait(timeout=5), "the upstream kept working for a client that left"
    assert fake_log.cancelled == 1
    assert seen.writes >= 2


def _dechunk(raw: bytes) -> bytes:
    body, at = bytearray(), raw.index(b"\r\n\r\n") + 4
    while True:
        end = raw.index(b"\r\n", at)
        size = int(raw[at:end], 16)
        if size == 0:
            return bytes(body)
        body += raw[end + 2 : end + 2 + size]
        assert raw[end + 2 + size : end + 4 + size] == b"\r\n"
        at = end + 4 + size


def test_slow_reader_gets_every_byte_in_order(gateways: tuple[str, str], seen: Seen) -> None:
    direct, plain = gateways
    body = {**BASE, "stream": True, "fake": {"tokens": 5000, "itl_s": 0}}
    sock = _raw_request(direct, body, rcvbuf=4096)
    # Not reading until the gateway found the client's buffer full (it then waits in send).
    assert seen.full.wait(timeout=60), "the client's buffer never filled"
    raw = b""
    while not raw.endswith(b"\r\n0\r\n\r\n"):
        chunk = sock.recv(1 << 16)
        assert chunk, "the gateway closed the stream"
        raw += chunk
    sock.close()
    assert _same(_dechunk(raw)) == _same(_body(plain, body))
