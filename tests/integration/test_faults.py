"""Fault injection on real loopback servers: every fault ends in a well-formed answer, no
hang, and no leak (upstream connections and tasks back to their baseline)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator

import httpx2 as httpx
import pytest

from gateway.app import build_app
from gateway.policy import load_policy_text
from gateway.runtime.parts import Gateway
from tests.support.policies import single_pool
from tests.support.servers import Served, serve_app
from tests.support.waiting import until

TIMEOUTS = "pools: {small: {retry: {attempts: 1}, timeouts: {first_token_s: 0.5, total_s: 1}}}\n"
BASE = {"model": "fast", "messages": [{"role": "user", "content": "hi"}]}


class Probe:
    def __init__(self, served: Served, gateway: Gateway) -> None:
        self.served = served
        self.gateway = gateway

    def _counts(self) -> tuple[int, int]:
        """(tasks, open upstream connections); run on the server's loop."""
        pool = self.gateway.upstream
        assert pool is not None
        return len(asyncio.all_tasks()) - 1, pool.open_connections

    def snapshot(self) -> tuple[int, int]:
        """(tasks, open upstream connections) now."""

        async def read() -> tuple[int, int]:
            return self._counts()

        return self.served.call(read)

    def back_to(self, tasks: int, conns: int) -> tuple[int, int]:
        """The counts once they are down to ``tasks`` and ``conns`` again (connection_lost
        and task ends have run); fails if they stay above (a leak)."""

        async def settle() -> tuple[int, int]:
            def down() -> bool:
                now_tasks, now_conns = self._counts()
                return now_tasks <= tasks and now_conns <= conns

            await until(down, what=f"tasks back to {tasks} and connections to {conns}")
            return self._counts()

        return self.served.call(settle)


@pytest.fixture
def probe(upstream: str) -> Iterator[Probe]:
    app = build_app(load_policy_text(single_pool(upstream, extra=TIMEOUTS)))
    with serve_app(app) as served:
        yield Probe(served, app.state.gateway)


FAULTS = {
    "killed mid-stream": ({"stream": True, "fake": {"break_after": 2}}, 200, "upstream_protocol"),
    "answers 500": ({"fake": {"status": 500, "body": "boom"}}, 502, "upstream_status"),
    "answers 500, streaming": (
        {"stream": True, "fake": {"status": 500, "body": "x"}},
        502,
        "upstream_status",
    ),
    # The client's head waits for the first token: no first token within first_token_s
    # (shorter than the stall limit here) is an HTTP error, not a 200 and an error event.
    "hangs after headers": (
        {"stream": True, "fake": {"hang_after_headers": True}},
        504,
        "upstream_timeout",
    ),
    "hangs, whole answer": ({"fake": {"hang": True}}, 504, "upstream_timeout"),
    "malformed SSE": ({"stream": True, "fake": {"bad_json_after": 1}}, 200, "upstream_invalid"),
}


@pytest.mark.parametrize(("extra", "status", "code"), FAULTS.values(), ids=FAULTS.keys())
def test_fault_ends_well_formed_without_leaks(
    probe: Probe, extra: dict[str, object], status: int, code: str | None
) -> None:
    with httpx.Client(base_url=probe.served.url, timeout=10) as http:
        assert http.post("/v1/chat/completions", json=BASE).status_code == 200  # warm
        tasks, conns = probe.snapshot()
        response = http.post("/v1/chat/completions", json={**BASE, **extra})
    assert response.status_code == status
    if extra.get("stream") and status == 200:
        events = [line for line in response.text.split("\n") if line.startswith("data: ")]
        assert "data: [DONE]" not in events  # cut short: never mistaken for a whole answer
        assert f'"code":"{code}"' in events[-1]
    else:
        assert response.json()["error"]["code"] == code
    after_tasks, after_conns = probe.back_to(tasks, conns)
    assert after_tasks <= tasks
    assert after_conns <= conns


def test_refused_connections_are_a_clean_503(start_gateway: object) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    app = build_app(load_policy_text(single_pool(dead)))
    with serve_app(app) as served, httpx.Client(base_url=served.url, timeout=10) as http:
        response = http.post("/v1/chat/completions", json=BASE)
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "no_healthy_backend"
