"""Backends discovered by a DNS name, under load: a replica added takes traffic once its health
probe passed, a replica removed gets no new request while the ones it was serving finish,
and no client sees an error. Three fake replicas on loopback addresses (127.0.0.2-4, one
port), named by a resolver stand-in the test edits (the gateway's resolver seam)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field

import httpx2 as httpx
import pytest
from prometheus_client import generate_latest

from gateway.app import build_app
from gateway.backends.discovery import NoAddress
from gateway.policy import load_policy_text
from loadtests.kit.fake_upstream import FakeConfig, FakeLog, build_fake
from tests.support.servers import serve, serve_app
from tests.support.waiting import until

ADDRESSES = ("127.0.0.2", "127.0.0.3", "127.0.0.4")
CONFIG = FakeConfig(model="fake-model", ttft_s=0.01, tokens=10, itl_s=0.01)


@dataclass
class Names:
    """The resolver stand-in: the addresses the fleet's name has now."""

    answer: list[str] = field(default_factory=list)
    asked: int = 0

    async def __call__(self, host: str, port: int) -> list[str]:
        assert host == "fleet.test"
        self.asked += 1
        if not self.answer:
            raise NoAddress(host)
        return list(self.answer)


@dataclass
class Fleet:
    port: int
    logs: dict[str, FakeLog]

    def arrived(self, address: str) -> int:
        return len(self.logs[address].bodies)


@pytest.fixture
def fleet() -> Iterator[Fleet]:
    logs = {a: FakeLog() for a in ADDRESSES}
    with ExitStack() as stack:
        first = stack.enter_context(
            serve_app(build_fake(CONFIG, logs[ADDRESSES[0]]), host=ADDRESSES[0])
        )
        port = int(first.url.rsplit(":", 1)[1])
        for address in ADDRESSES[1:]:
            stack.enter_context(serve(build_fake(CONFIG, logs[address]), host=address, port=port))
        yield Fleet(port, logs)


def _policy(port: int) -> str:
    return (
        "backends:\n"
        f"  - {{name: fleet, discover: {{dns: fleet.test, port: {port}, interval_s: 0.1}},"
        " model: fake-model, pool: main}\n"
        "models:\n  fast: {pool: main}\n"
        # No hedging: a hedge's loser is cancelled on purpose, and this test counts a
        # cancellation as an in-flight request that did not finish when its replica went.
        "pools: {main: {recovery: {hedge: false}}}\n"
        "health: {interval_s: 0.1}\n"
        "server: {access_log: false}\n"
    )


@dataclass
class Load:
    """Closed-loop streaming clients; every answer checked whole."""

    url: str
    done: int = 0
    errors: list[str] = field(default_factory=list)
    stop: bool = False

    async def client(self) -> None:
        body = {"model": "fast", "messages": [{"role": "user", "content": "hi"}], "stream": True}
        async with httpx.AsyncClient(timeout=10) as http:
            while not self.stop:
                async with http.stream("POST", self.url + "/v1/chat/completions", json=body) as r:
                    text = b"".join([chunk async for chunk in r.aiter_bytes()])
                if r.status_code != 200 or not text.endswith(b"data: [DONE]\n\n"):
                    self.errors.append(f"{r.status_code}: {text[-200:]!r}")
                elif text.count(b'"model":"fast"') != CONFIG.tokens:
                    self.errors.append(f"incomplete: {text[-200:]!r}")
                self.done += 1


async def test_replicas_come_and_go_under_load_without_a_client_error(fleet: Fleet) -> None:
    names = Names(answer=list(ADDRESSES[:2]))
    app = build_app(load_policy_text(_policy(fleet.port)), resolver=names)
    gateway = app.state.gateway
    with serve(app) as url:
        load = Load(url)
        clients = [asyncio.create_task(load.client()) for _ in range(6)]
        try:
            await until(lambda: all(fleet.arrived(a) > 5 for a in ADDRESSES[:2]))
            assert fleet.arrived(ADDRESSES[2]) == 0

            names.answer = list(ADDRESSES)  # a replica added
            await until(lambda: fleet.arrived(ADDRESSES[2]) > 5, what="the new replica serves")
            assert {b.name for b in gateway.policy.backends} == {"fleet-0", "fleet-1", "fleet-2"}

            leaving = gateway.backends.get("fleet-0")
            assert leaving is not None
            names.answer = list(ADDRESSES[1:])  # a replica removed
            await until(lambda: "fleet-0" not in {b.name for b in gateway.policy.backends})
            # Requests picked for it just before the swap may still be on their way to it:
            # counted once the gateway has none left there.
            await until(lambda: leaving.inflight == 0, what="the removed replica's requests end")
            gone = fleet.arrived(ADDRESSES[0])
            later = {a: fleet.arrived(a) for a in ADDRESSES[1:]}
            await until(lambda: all(fleet.arrived(a) > later[a] + 10 for a in ADDRESSES[1:]))
            assert fleet.arrived(ADDRESSES[0]) == gone  # no new request once it was gone
        finally:
            load.stop = True
            await asyncio.gather(*clients)
    assert load.errors == []
    assert load.done > 30
    assert all(log.cancelled == 0 for log in fleet.logs.values())  # in-flight ones finished
    # A replica gone leaves no series behind (it would read as healthy forever).
    exposition = generate_latest(gateway.metrics.registry).decode()
    assert 'gateway_backend_healthy{backend="fleet-0"' not in exposition
    assert 'gateway_backend_healthy{backend="fleet-2",pool="main"} 1.0' in exposition
    # Names stay bounded and stable: a replica keeps its slot, a new one takes a free slot.
    assert {b.name: b.url for b in gateway.policy.backends} == {
        "fleet-1": f"http://{ADDRESSES[1]}:{fleet.port}",
        "fleet-2": f"http://{ADDRESSES[2]}:{fleet.port}",
    }


async def test_a_name_with_no_address_leaves_its_pool_not_ready(fleet: Fleet) -> None:
    names = Names(answer=[])
    app = build_app(load_policy_text(_policy(fleet.port)), resolver=names)
    gateway = app.state.gateway
    with serve(app) as url:
        async with httpx.AsyncClient(timeout=10) as http:
            assert (await http.get(url + "/readyz")).status_code == 503
            assert [b.url for b in gateway.policy.backends] == [f"http://fleet.test:{fleet.port}"]
            names.answer = [ADDRESSES[0]]
            await until(lambda: gateway.backends.pool_ready(gateway.policy)["main"])
            assert (await http.get(url + "/readyz")).status_code == 200
