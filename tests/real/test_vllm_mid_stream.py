"""Two real vLLM (CPU) replicas behind the gateway; the one serving a stream is killed
mid-answer (SIGKILL: a dying process, no clean shutdown) and the gateway continues the
answer on the other with ``continue_final_message`` (issue 32). Opt-in, with the vLLM suite:
``bash .ci/real-vllm``.

What the client must see: one stream, one ``id``, ``[DONE]`` at the end, and at temperature 0
the text of one uninterrupted run; the gateway counts one continuation that went on.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2 as httpx
import orjson
import pytest

from gateway.app import build_app
from gateway.policy import load_policy_text
from loadtests.kit.ports import free_port
from loadtests.real.launch import Process
from loadtests.real.mid_stream import greedy_body, kill
from loadtests.real.model import SERVED_NAME
from loadtests.real.vllm_cpu import VllmOptions, vllm_process
from tests.support.servers import serve

BODY = greedy_body(
    [{"role": "user", "content": "List the days of the week, then the months of the year."}],
    max_tokens=40,
    ignore_eos=True,
)
KILL_AFTER = 8


@pytest.fixture(scope="module")
def pair(cache: Path) -> Iterator[dict[str, Process]]:
    """Two vLLM servers (named as the policy names them); the test may kill either."""
    if os.environ.get("LATENCY_GATEWAY_VLLM") != "1":
        pytest.skip("opt-in: bash .ci/real-vllm (sets LATENCY_GATEWAY_VLLM=1)")
    with ExitStack() as stack:
        servers = {
            f"vllm-{i}": stack.enter_context(
                vllm_process(
                    cache,
                    VllmOptions(
                        port=free_port(), served_name=SERVED_NAME, kv_cache_gib=1, max_num_seqs=2
                    ),
                )
            )
            for i in range(2)
        }
        yield servers


def _policy(servers: dict[str, Process]) -> str:
    backends = "".join(
        f"  - {{name: {name}, url: '{server.url}', engine: vllm, model: {SERVED_NAME},"
        " pool: cpu}\n"
        for name, server in servers.items()
    )
    return (
        f"backends:\n{backends}"
        "models:\n  gemma: {pool: cpu}\n"
        "pools:\n  cpu:\n"
        "    timeouts: {connect_s: 5, first_token_s: 120, idle_s: 60, total_s: 300}\n"
        "    admission: {objective: null}\n"
        # The race is not what is tested: one attempt, then its continuation.
        "    recovery: {hedge: false}\n"
        "health: {interval_s: 2, timeout_s: 5}\n"
        "server: {access_log: false}\n"
    )


@dataclass(slots=True)
class Seen:
    """What the client saw of one stream through the gateway."""

    backend: str = ""
    pieces: list[str] = field(default_factory=list)
    ids: set[str] = field(default_factory=set)
    done: bool = False
    errors: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(self.pieces)


async def _stream(
    http: httpx.AsyncClient, gateway: str, servers: dict[str, Process], kill_after: int | None
) -> Seen:
    """Stream ``BODY`` through the gateway; after ``kill_after`` chunks with text, kill the
    replica that serves it (the gateway names it in ``x-gateway-backend``)."""
    seen = Seen()
    body: dict[str, Any] = {**BODY, "model": "gemma"}
    async with http.stream("POST", gateway + "/v1/chat/completions", json=body) as response:
        assert response.status_code == 200, await response.aread()
        seen.backend = response.headers["x-gateway-backend"]
        async for line in response.aiter_lines():
            if line == "data: [DONE]":
                seen.done = True
            elif line.startswith("data: "):
                event = orjson.loads(line[6:])
                if "error" in event:
                    seen.errors.append(str(event["error"]))
                    continue
                seen.ids.add(event["id"])
                delta = (event.get("choices") or [{}])[0].get("delta") or {}
                if delta.get("content"):
                    seen.pieces.append(delta["content"])
                if kill_after is not None and len(seen.pieces) == kill_after:
                    kill(servers[seen.backend].proc)
    return seen


async def test_a_killed_replica_s_stream_goes_on_from_the_other(
    pair: dict[str, Process], http: httpx.AsyncClient
) -> None:
    with serve(build_app(load_policy_text(_policy(pair)))) as gateway:
        whole = await _stream(http, gateway, pair, kill_after=None)
        assert whole.done
        assert not whole.errors
        assert len(whole.pieces) == BODY["max_tokens"]  # one token per chunk

        cut = await _stream(http, gateway, pair, kill_after=KILL_AFTER)
        assert pair[cut.backend].proc.poll() is not None  # it was killed
        assert cut.errors == []
        assert cut.done
        assert len(cut.ids) == 1
        assert cut.text == whole.text
        metrics = (await http.get(gateway + "/metrics")).text
        assert 'gateway_continuations_total{pool="cpu",result="ok"} 1.0' in metrics
