"""Fixtures for the suites against real inference servers (see ``loadtests/real``).

llama.cpp's server is set up by ``.ci/test`` (``python -m loadtests.real llamacpp setup``);
without that cache the llama.cpp tests are skipped, except under CI (``CI`` set), where a
missing backend is an error. vLLM's suite runs only with ``LATENCY_GATEWAY_VLLM=1``
(``bash .ci/real-vllm``); ``LATENCY_GATEWAY_VLLM_URL`` points it at a vLLM already running
(``python -m loadtests.real vllm serve --max-num-seqs 4``).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx2 as httpx
import pytest

from gateway.app import build_app
from gateway.policy import load_policy_text
from loadtests.kit.ports import free_port
from loadtests.real.cache import cache_root
from loadtests.real.launch import Process, llamacpp_ready, llamacpp_server
from loadtests.real.llamacpp import ServeOptions
from loadtests.real.mid_stream import llamacpp_pair
from loadtests.real.model import SERVED_NAME
from loadtests.real.policy import real_policy
from loadtests.real.vllm_cpu import VllmOptions, vllm_server
from tests.support.servers import serve

SLOTS = 4


@pytest.fixture(scope="session")
def cache() -> Path:
    return cache_root()


def need_llamacpp(cache: Path) -> None:
    """Skip (fail under CI) when llama.cpp is not set up in the cache."""
    if not llamacpp_ready(cache):
        message = f"llama.cpp is not set up in {cache}: python -m loadtests.real llamacpp setup"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture(scope="session")
def llamacpp(cache: Path) -> Iterator[str]:
    """Base URL of one llama.cpp server for the whole session (4 slots, 2 threads)."""
    need_llamacpp(cache)
    options = ServeOptions(port=free_port(), served_name=SERVED_NAME, parallel=SLOTS)
    with llamacpp_server(cache, options) as url:
        yield url


@pytest.fixture
def pair(cache: Path) -> Iterator[tuple[Process, Process]]:
    """Two llama.cpp servers of one slot each, new for each test (which may kill them)."""
    need_llamacpp(cache)
    with llamacpp_pair(cache, (free_port(), free_port()), parallel=1) as servers:
        yield servers


@pytest.fixture
def llamacpp_gateway(llamacpp: str) -> Iterator[str]:
    """A gateway in front of the session's llama.cpp server (engine ``llamacpp``) whose pool
    admits as many requests as the server has slots and queues one more. It reads the load
    every 2 s: more often, llama.cpp would not notice clients that leave before their first
    token or during a whole answer (see test_llamacpp.QUIET_POLL_S)."""
    policy = load_policy_text(real_policy(llamacpp, "llamacpp", max_queue=1, scrape_s=2.0))
    with serve(build_app(policy)) as url:
        yield url


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=120) as client:
        yield client


@pytest.fixture(scope="session")
def vllm(cache: Path) -> Iterator[str]:
    """Base URL of one real vLLM (CPU) server for the session, running at most 4 sequences
    at once (so 4 long streams fill it, like llama.cpp's slots). Opt-in."""
    if os.environ.get("LATENCY_GATEWAY_VLLM") != "1":
        pytest.skip("opt-in: bash .ci/real-vllm (sets LATENCY_GATEWAY_VLLM=1)")
    running = os.environ.get("LATENCY_GATEWAY_VLLM_URL")
    if running:  # a server started apart, with --max-num-seqs 4 (saves minutes of start-up)
        yield running
        return
    options = VllmOptions(port=free_port(), served_name=SERVED_NAME, max_num_seqs=SLOTS)
    with vllm_server(cache, options) as url:
        yield url


@pytest.fixture
def vllm_gateway(vllm: str) -> Iterator[str]:
    policy = load_policy_text(real_policy(vllm, "vllm", max_queue=1))
    with serve(build_app(policy)) as url:
        yield url
