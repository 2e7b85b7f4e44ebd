"""Cluster admission with a real redis-server and two real gateway processes.

The pool's limit is 4 for the whole cluster; each gateway's single backend entry allows 4
too, so without Redis leases the two gateways together would send 8 at once.
"""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx2 as httpx
import pytest

from loadtests.kit.fake_upstream import FakeConfig, build_fake
from loadtests.kit.ports import free_port
from tests.support.concurrency import ConcurrencyProbe
from tests.support.policies import single_pool
from tests.support.processes import gateway_process, read_until
from tests.support.redis_server import RedisServer, redis_server
from tests.support.servers import serve

CHAT = "/v1/chat/completions"
LIMIT = 4
TTL_S = 2.0


@pytest.fixture
def redis(tmp_path: Path) -> Iterator[RedisServer]:
    with redis_server(tmp_path) as server:
        yield server


@pytest.fixture
def probe() -> Iterator[tuple[str, ConcurrencyProbe]]:
    counted = ConcurrencyProbe(build_fake(FakeConfig(ttft_s=0.005, tokens=3, itl_s=0.001)))
    with serve(counted) as url:
        yield url, counted


def _policy(upstream: str, redis_url: str) -> str:
    cluster = (
        f"cluster: {{enabled: true, redis_url: '{redis_url}', key_prefix: it, "
        f"lease_ttl_s: {TTL_S}, renew_interval_s: 0.2, op_timeout_s: 0.1, poll_s: 0.02}}\n"
        "server: {drain_timeout_s: 0}\n"
        # Lease mechanics: requests queue for the cluster's slots whatever the wait.
        "pools:\n  small: {admission: {objective: null}}\n"
    )
    return single_pool(upstream, inflight=LIMIT) + cluster


@contextmanager
def _gateways(
    policy: str, tmp_path: Path, n: int = 2
) -> Iterator[list[tuple[str, subprocess.Popen[str]]]]:
    path = tmp_path / "policy.yaml"
    path.write_text(policy)
    with ExitStack() as stack:
        started = []
        for _ in range(n):
            port = free_port()
            proc = stack.enter_context(
                gateway_process(["serve", "--policy", str(path), "--port", str(port)])
            )
            read_until(proc, "Uvicorn running on")
            started.append((f"http://127.0.0.1:{port}", proc))
        yield started


def _series(name: str, **labels: str) -> str:
    inner = ",".join(f'{k}="{v}"' for k, v in sorted({"pool": "small", **labels}.items()))
    return f"{name}{{{inner}}}"


def _metric(url: str, name: str, **labels: str) -> float:
    text = httpx.get(url + "/metrics").text
    series = re.escape(_series(name, **labels))
    match = re.search(rf"^{series} (\S+)$", text, re.MULTILINE)
    assert match is not None, f"{series} missing"
    return float(match.group(1))


async def _wait_metric(url: str, name: str, value: float, **labels: str) -> None:
    line = f"{_series(name, **labels)} {value}"
    async with asyncio.timeout(15), httpx.AsyncClient() as http:
        while line not in (await http.get(url + "/metrics")).text:  # noqa: ASYNC110
            await asyncio.sleep(0.02)  # polling another process: nothing to await instead


async def _wait_held_at_most(url: str, most: int) -> None:
    async with asyncio.timeout(15):
        while await asyncio.to_thread(_metric, url, "gateway_cluster_held_leases") > most:  # noqa: ASYNC110
            await asyncio.sleep(0.02)  # polling another process: nothing to await instead


def _body(**fake: object) -> dict[str, object]:
    return {"model": "fast", "messages": [{"role": "user", "content": "hi"}], "fake": fake}


async def _burst(url: str, n: int, **fake: object) -> list[int]:
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        answers = await asyncio.gather(*(http.post(CHAT, json=_body(**fake)) for _ in range(n)))
    return [a.status_code for a in answers]


# About 0.2 s upstream per request: long enough for the limit to bind.
WORK = {"ttft_s": 0.1, "tokens": 2, "itl_s": 0.05}


async def test_two_loaded_gateways_never_exceed_the_cluster_limit(
    redis: RedisServer, probe: tuple[str, ConcurrencyProbe], tmp_path: Path
) -> None:
    upstream, counted = probe
    with _gateways(_policy(upstream, redis.url), tmp_path) as [(a, _), (b, _)]:
        for url in (a, b):
            await _wait_metric(url, "gateway_cluster_replicas", 2.0)
        counted.reset_peak()
        statuses = await asyncio.gather(_burst(a, 12, **WORK), _burst(b, 12, **WORK))
        assert statuses == [[200] * 12, [200] * 12]
        assert counted.peak == LIMIT  # the whole cluster limit used, never more
        for url in (a, b):
            assert _metric(url, "gateway_cluster_mode") == 1.0
            assert _metric(url, "gateway_cluster_held_leases") == 0.0


async def test_a_killed_gateways_leases_expire_then_the_other_gets_the_whole_limit(
    redis: RedisServer, probe: tuple[str, ConcurrencyProbe], tmp_path: Path
) -> None:
    upstream, counted = probe
    policy = _policy(upstream, redis.url)
    with _gateways(policy, tmp_path) as [(a, proc_a), (b, _)]:
        await _wait_metric(b, "gateway_cluster_replicas", 2.0)
        async with (
            httpx.AsyncClient(base_url=a, timeout=30) as http_a,
            httpx.AsyncClient(base_url=b, timeout=30) as http_b,
        ):
            hang = _body(hang=True)
            held = [asyncio.create_task(http_a.post(CHAT, json=hang)) for _ in range(LIMIT)]
            await asyncio.to_thread(counted.wait_for, LIMIT, 10)  # a holds every lease
            queued = [asyncio.create_task(http_b.post(CHAT, json=hang)) for _ in range(LIMIT)]
            depth = {"lane": "short", "priority": "standard"}
            await _wait_metric(b, "gateway_queue_depth", float(LIMIT), **depth)

            proc_a.send_signal(signal.SIGKILL)  # no goodbye: its leases stay in Redis
            killed = time.monotonic()
            await asyncio.gather(*held, return_exceptions=True)
            await asyncio.to_thread(counted.wait_for, 0, 10)  # a's upstream calls are gone
            await asyncio.to_thread(counted.wait_for, LIMIT, TTL_S + 10)  # b's turn
            waited = time.monotonic() - killed
            assert _metric(b, "gateway_cluster_held_leases") == float(LIMIT)
            for task in queued:
                task.cancel()
            await asyncio.gather(*queued, return_exceptions=True)
    # The dead leases held b back until they expired (a lease lives TTL_S after its last
    # renewal, and renewals came every 0.2 s).
    assert waited > TTL_S - 0.5


async def _load(url: str, stop: asyncio.Event, statuses: list[int]) -> None:
    while not stop.is_set():
        statuses += await _burst(url, LIMIT, **WORK)


async def test_redis_stopped_mid_test_every_request_succeeds_on_local_shares(
    redis: RedisServer, probe: tuple[str, ConcurrencyProbe], tmp_path: Path
) -> None:
    upstream, counted = probe
    with _gateways(_policy(upstream, redis.url), tmp_path) as [(a, _), (b, _)]:
        for url in (a, b):
            await _wait_metric(url, "gateway_cluster_replicas", 2.0)
        stop = asyncio.Event()
        statuses: list[int] = []
        load = [asyncio.create_task(_load(url, stop, statuses)) for url in (a, b)]
        await asyncio.to_thread(counted.wait_for, LIMIT, 10)

        redis.stop()
        for url in (a, b):
            await _wait_metric(url, "gateway_cluster_mode", 0.0)
        # A replica may have held more than its share when Redis went (nobody else was
        # waiting then); once those requests are done, neither goes past its share again.
        for url in (a, b):
            await _wait_held_at_most(url, LIMIT // 2)
        served = counted.total
        counted.reset_peak()
        # Both keep serving, on their local shares.
        await asyncio.to_thread(counted.wait_total, served + 16, 15)
        assert counted.peak <= LIMIT  # two shares of ceil(4 / 2) = 2

        redis.start()
        for url in (a, b):
            await _wait_metric(url, "gateway_cluster_mode", 1.0)
            await _wait_metric(url, "gateway_cluster_replicas", 2.0)
        served = counted.total
        await asyncio.to_thread(counted.wait_total, served + 16, 15)
        stop.set()
        await asyncio.gather(*load)
        for url in (a, b):
            errors = httpx.get(url + "/metrics").text
            assert re.search(r'^gateway_redis_errors_total\{op="renew"\} [1-9]', errors, re.M)
    assert len(statuses) > 32
    assert set(statuses) == {200}  # no client ever saw Redis trouble


async def test_a_gateway_started_without_redis_serves_on_its_local_share(
    probe: tuple[str, ConcurrencyProbe], tmp_path: Path
) -> None:
    upstream, counted = probe
    nobody = f"redis://127.0.0.1:{free_port()}/0"
    policy = _policy(upstream, nobody).replace("key_prefix: it,", "fallback_replicas: 2,")
    with _gateways(policy, tmp_path, n=1) as [(a, _)]:
        assert _metric(a, "gateway_cluster_mode") == 0.0
        counted.reset_peak()
        assert await _burst(a, 8, **WORK) == [200] * 8
        assert counted.peak == LIMIT // 2  # ceil(4 / fallback_replicas)
