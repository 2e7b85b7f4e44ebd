"""The gateway continues a stream whose real llama.cpp server is killed mid-answer (issue 32).

Two llama.cpp servers of one slot each form one pool (``engine: llamacpp``, so a cut stream
is continued as an assistant prefill); the gateway runs in front on a real uvicorn server
and the OpenAI SDK streams a chat through it at temperature 0. The gateway's response head
names the replica serving the stream (``x-gateway-backend``): that server's process group
is killed with SIGKILL once the client has read ``kill_after`` chunks with text. The
client's stream still ends with ``[DONE]``, under one id, its text is the uninterrupted
answer (asked of the surviving server afterwards, with the same body), its usage is the
uninterrupted one's, and the gateway counts one successful continuation.

The body turns the prompt cache off (``cache_prompt: false``, passed through by the gateway
to both attempts): see test_llamacpp_mid_stream.py for why exactness needs it. The kill has
to land before the server's last token: the server would have to make the 20 or more tokens
left while the last ones read crossed two loopback hops; if it ever did, the continuation
counter says so.
"""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx2 as httpx
import openai
import orjson
import pytest
from openai.types.chat import ChatCompletionChunk

from gateway.app import build_app
from gateway.policy import load_policy_text
from loadtests.real.launch import Process
from loadtests.real.mid_stream import greedy_body, kill, stream_text
from loadtests.real.policy import real_policy
from loadtests.real.probe import metrics
from tests.real.helpers import PUBLIC
from tests.support.servers import serve

PROMPT = "List the days of the week, then the months of the year."
MAX_TOKENS = 40
# Cut points at which the servers alone continued this prompt exactly
# (test_llamacpp_mid_stream.py): early, middle, late.
KILL_AFTER = (2, 5, 20)
# What llama.cpp reads besides the OpenAI fields; the gateway passes them on.
ENGINE = {"ignore_eos": True, "cache_prompt": False}
CONTINUED = 'gateway_continuations_total{pool="cpu",result="ok"}'
# Two servers started for each case: 17 s each at a load average of 9 on 2 shared cores.
pytestmark = pytest.mark.timeout(600)


@pytest.fixture
def gateway(pair: tuple[Process, Process]) -> Iterator[str]:
    """The gateway in front of both servers, one request at a time on each."""
    urls = [server.url for server in pair]
    policy = load_policy_text(real_policy(urls, "llamacpp", inflight=1, scrape_s=2.0))
    with serve(build_app(policy)) as url:
        yield url


@pytest.fixture
async def client(gateway: str) -> AsyncIterator[openai.AsyncOpenAI]:
    sdk = openai.AsyncOpenAI(base_url=gateway + "/v1", api_key="unused", max_retries=0)
    async with sdk:
        yield sdk


@pytest.mark.parametrize("kill_after", KILL_AFTER)
async def test_a_stream_whose_server_is_killed_goes_on_on_the_other_exactly(
    pair: tuple[Process, Process],
    gateway: str,
    client: openai.AsyncOpenAI,
    http: httpx.AsyncClient,
    kill_after: int,
) -> None:
    servers = {f"real-{i}": server for i, server in enumerate(pair)}
    chunks: list[ChatCompletionChunk] = []
    ended = "clean"  # done: [DONE] came; or the error event's
    async with client.chat.completions.with_streaming_response.create(
        model=PUBLIC,
        messages=[{"role": "user", "content": PROMPT}],
        max_tokens=MAX_TOKENS,
        temperature=0,
        seed=0,
        stream=True,
        stream_options={"include_usage": True},
        extra_body=ENGINE,
        timeout=120,
    ) as response:
        serving = servers[response.headers["x-gateway-backend"]]
        texts = 0
        # Read as lines, not parsed by the SDK, to see how the stream ends.
        async for line in response.iter_lines():
            if line == "data: [DONE]":
                ended = "done"
            elif line.startswith("data: "):
                data: dict[str, Any] = orjson.loads(line[6:])
                if "error" in data:
                    ended = str(data["error"])
                    continue
                chunks.append(ChatCompletionChunk.model_validate(data))
                if chunks[-1].choices and chunks[-1].choices[0].delta.content:
                    texts += 1
                    if texts == kill_after:
                        kill(serving.proc)
    assert serving.proc.wait(timeout=10) == -signal.SIGKILL
    (survivor,) = (server for server in pair if server is not serving)

    found = await metrics(http, gateway)
    counted = {k: v for k, v in found.items() if k.startswith("gateway_continuations_total{")}
    assert (ended, found.get(CONTINUED)) == ("done", 1), counted
    assert {chunk.id for chunk in chunks} == {chunks[0].id}
    assert {chunk.model for chunk in chunks} == {PUBLIC}
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)

    body = greedy_body([{"role": "user", "content": PROMPT}], MAX_TOKENS, **ENGINE)
    whole = await stream_text(
        http, survivor.url, {**body, "stream_options": {"include_usage": True}}
    )
    assert whole.ended == "done"
    assert text == whole.text
    usage = chunks[-1].usage
    assert usage is not None
    assert whole.usage is not None
    assert usage.completion_tokens == whole.usage["completion_tokens"] == MAX_TOKENS
    assert usage.prompt_tokens == whole.usage["prompt_tokens"]
