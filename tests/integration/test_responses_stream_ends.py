"""How a relayed Responses API stream ends when the backend's does not end well: a backend
whose stream stops before its terminal event, or that reports an error as a typed ``error``
event, or falls silent. The client gets the Responses API's own ``error`` event (never the
backend's words as sent, never a chat-style ``data: [DONE]``); so does a stream the gateway
cuts when it shuts down."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx2 as httpx
import orjson
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from loadtests.kit.ports import free_port
from tests.integration.conftest import GatewayFactory
from tests.support.policies import single_pool
from tests.support.processes import gateway_process, read_until
from tests.support.servers import serve
from tests.support.sim_replica import SERVED, sim_replica

SECRET_WORDS = "internal stack trace at /srv/engine.py"


def _event(kind: str, **fields: object) -> bytes:
    data = orjson.dumps({"type": kind, **fields})
    return b"event: " + kind.encode() + b"\ndata: " + data + b"\n\n"


CREATED = _event("response.created", sequence_number=0, response={"model": "m", "id": "r"})
DELTA = _event("response.output_text.delta", sequence_number=1, delta=" hi", item_id="i")


async def _script(ending: str) -> AsyncIterator[bytes]:
    yield CREATED + DELTA
    if ending == "error_event":
        yield _event("error", sequence_number=2, code="server_error", message=SECRET_WORDS)
    elif ending == "silent":
        await asyncio.Event().wait()  # silent until the gateway gives up and cancels it


def _backend() -> Starlette:
    async def responses(request: Request) -> Response:
        body = orjson.loads(await request.body())
        return StreamingResponse(_script(body["ending"]), media_type="text/event-stream")

    async def health(request: Request) -> Response:
        return Response(b"", 200)

    return Starlette(
        routes=[Route("/v1/responses", responses, methods=["POST"]), Route("/health", health)]
    )


@pytest.fixture
def gateway(start_gateway: GatewayFactory) -> Iterator[str]:
    timeouts = "pools:\n  small:\n    timeouts: {idle_s: 0.5}\n"
    with (
        serve(_backend()) as upstream,
        start_gateway(single_pool(upstream, served="m", extra=timeouts)) as url,
    ):
        yield url


@pytest.mark.parametrize(
    ("ending", "code"),
    [
        ("cut_short", "upstream_invalid"),  # no response.completed before the end
        ("error_event", "upstream_status"),  # the backend's error event, rebuilt
        ("silent", "upstream_timeout"),  # idle_s passes with no event
    ],
)
def test_a_stream_that_ends_badly_ends_with_an_error_event(
    gateway: str, ending: str, code: str
) -> None:
    body = {"model": "fast", "input": "hi", "stream": True, "ending": ending}
    with httpx.stream("POST", gateway + "/v1/responses", json=body, timeout=20) as reply:
        text = b"".join(reply.iter_bytes())
    frames = text.split(b"\n\n")
    assert frames[0].startswith(b"event: response.created\ndata: ")
    assert orjson.loads(frames[0].split(b"data: ", 1)[1])["response"]["model"] == "fast"
    assert frames[1] == DELTA.removesuffix(b"\n\n")
    head, data = frames[2].split(b"\n", 1)
    assert head == b"event: error"
    error = orjson.loads(data.removeprefix(b"data: "))
    assert (error["type"], error["code"], error["sequence_number"]) == ("error", code, 2)
    assert frames[3:] == [b""]  # nothing after it: no data: [DONE]
    assert SECRET_WORDS.encode() not in text


def test_a_stream_cut_by_shutdown_ends_with_an_error_event(tmp_path: Path) -> None:
    with sim_replica() as sim:
        path = tmp_path / "policy.yaml"
        path.write_text(single_pool(sim.url, served=SERVED) + "server: {drain_timeout_s: 1}\n")
        port = free_port()
        body = {
            "model": "fast",
            "input": "a long story",
            "stream": True,
            "max_output_tokens": 20_000,
            "ignore_eos": True,
        }
        with gateway_process(["serve", "--policy", str(path), "--port", str(port)]) as proc:
            read_until(proc, "Uvicorn running on")
            url = f"http://127.0.0.1:{port}/v1/responses"
            with httpx.stream("POST", url, json=body, timeout=30) as reply:
                lines = reply.iter_lines()
                next(line for line in lines if line == "event: response.output_text.delta")
                proc.send_signal(signal.SIGTERM)
                rest = [line for line in lines if line]
            proc.wait(timeout=15)
        engine = sim.replica.engine
        sim.wait_until(lambda: engine.counters.aborts == 1)
    assert rest[-2] == "event: error"
    error = orjson.loads(rest[-1].removeprefix("data: "))
    assert (error["type"], error["code"]) == ("error", "shutting_down")
    assert error["sequence_number"] > 2
    assert "data: [DONE]" not in rest
