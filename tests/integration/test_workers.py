"""``serve --workers 2`` for real: two processes answer on one port and behave as one gateway
(admission and rate limits across both, /metrics of both, a reload reaching both, SIGTERM
stopping all, a dead worker's connections going to the other)."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from gateway.host.board import Board, alive
from loadtests.kit.fake_upstream import FakeConfig, build_fake
from loadtests.kit.ports import free_port
from loadtests.peers.targets import workers_serving
from tests.support.processes import gateway_process
from tests.support.security import TENANT_A_KEY, tenants_yaml
from tests.support.servers import serve

BURST = 8


class Concurrency:
    """ASGI wrapper: the most generation requests the upstream had at once. A request counts
    from its arrival until its response's last message goes out: the app's own teardown
    after that (the response framework's tasks) yields to the loop, and a next request the
    gateway sent on the complete response may arrive in it."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.now = 0
        self.most = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not scope["path"].endswith("/completions"):
            await self.app(scope, receive, send)
            return
        self.now += 1
        self.most = max(self.most, self.now)
        counted = True

        async def send_counted(message: Any) -> None:
            nonlocal counted
            last = message["type"] == "http.response.body" and not message.get("more_body")
            if last and counted:  # before it leaves: nothing can follow it sooner
                counted = False
                self.now -= 1
            await send(message)

        try:
            await self.app(scope, receive, send_counted)
        finally:
            if counted:
                self.now -= 1


@pytest.fixture
def counted() -> Iterator[tuple[str, Concurrency]]:
    app = Concurrency(build_fake(FakeConfig(ttft_s=0.3, tokens=3, itl_s=0.01)))
    with serve(app) as url:
        yield url, app


def _policy(upstream: str) -> str:
    # Objective off: the burst waits for the two slots instead of being refused.
    return f"""
backends:
  - {{name: b0, url: "{upstream}", engine: openai, model: fake-model, pool: main,
     max_inflight: 2}}
models:
  fast: {{pool: main}}
pools:
  main: {{admission: {{objective: null}}}}
server: {{drain_timeout_s: 2}}
"""


def _workers_of(pid: int) -> list[int]:
    """The worker processes the supervisor ``pid`` spawned (not multiprocessing's tracker)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            command = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == pid and b"spawn_main" in command:
            found.append(int(stat.parent.name))
    return found


def _worker_samples(base: str, name: str) -> dict[str, float]:
    """Per worker label, the sum of a counter family's samples in /metrics."""
    text = httpx.get(base + "/metrics", timeout=10).text
    totals: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        if family.name != name:
            continue
        for sample in family.samples:
            if sample.name == name + "_total":
                worker = sample.labels["worker"]
                totals[worker] = totals.get(worker, 0.0) + sample.value
    return totals


def _workers_up(base: str, proc: subprocess.Popen[str]) -> None:
    """Until /metrics shows both workers (each answers its siblings once it serves)."""
    workers_serving(base, 2, proc, timeout_s=60.0)


def proc_wait(proc: subprocess.Popen[str], seconds: float) -> None:
    try:
        proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        return


@contextmanager
def _served(policy: str, tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    path = tmp_path / "policy.yaml"
    path.write_text(policy)
    port = free_port()
    args = ["serve", "--policy", str(path), "--port", str(port), "--workers", "2"]
    with gateway_process(args) as proc:
        base = f"http://127.0.0.1:{port}"
        _workers_up(base, proc)
        yield proc, base


def _stream(base: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    body = {"model": "fast", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    # A fresh connection each: the kernel spreads them over the workers' sockets.
    with httpx.Client(timeout=30) as http:
        response = http.post(base + "/v1/chat/completions", json=body, headers=headers or {})
        return response.status_code, response.text


def test_two_workers_are_one_gateway(counted: tuple[str, Concurrency], tmp_path: Path) -> None:
    upstream, fake = counted
    with _served(_policy(upstream), tmp_path) as (proc, base):
        workers = _workers_of(proc.pid)
        with ThreadPoolExecutor(BURST) as pool:
            answers = list(pool.map(lambda _: _stream(base), range(BURST)))
        assert [status for status, _ in answers] == [200] * BURST
        assert all(text.rstrip().endswith("data: [DONE]") for _, text in answers)
        # Admission across both workers: the replica's max_inflight of 2 held for the host.
        assert fake.most == 2
        served, sent = _worker_samples(base, "gateway_requests"), BURST
        while set(served) != {"0", "1"} and sent < 40:  # all 8 reached one: one time in 128
            assert _stream(base)[0] == 200
            served, sent = _worker_samples(base, "gateway_requests"), sent + 1
        assert set(served) == {"0", "1"}  # /metrics shows both workers' series
        assert sum(served.values()) == sent

        reload = httpx.post(base + "/admin/reload", timeout=10).json()
        assert reload["status"] == "unchanged"
        assert sorted(reload["workers"]) == ["0", "1"]
        assert {w["status"] for w in reload["workers"].values()} == {"unchanged"}

        dashboard = httpx.get(base + "/dashboard/data", timeout=10).json()
        pool_view = dashboard["pools"][0]
        assert pool_view["name"] == "main"
        assert pool_view["inflight"] == 0

        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    assert len(workers) == 2
    assert not [pid for pid in workers if alive(pid)]  # every worker stopped with it


def test_a_tenants_rate_limit_holds_across_workers(
    counted: tuple[str, Concurrency], tmp_path: Path
) -> None:
    upstream, _ = counted
    auth = tenants_yaml(alpha_extra="      rate_limit: {requests_per_minute: 3}")
    with _served(_policy(upstream) + auth, tmp_path) as (_, base):
        headers = {"authorization": f"Bearer {TENANT_A_KEY}"}
        statuses: list[int] = []
        # Bursts of six until both workers took some (the kernel spreads connections at
        # random: all six of one burst reach one worker about one time in 32).
        while len(statuses) < 30:
            with ThreadPoolExecutor(6) as pool:
                statuses += [s for s, _ in pool.map(lambda _: _stream(base, headers), range(6))]
            limited = _worker_samples(base, "gateway_tenant_requests")
            if set(limited) == {"0", "1"}:
                break
        assert set(limited) == {"0", "1"}
        # Three a minute for the host, not for each worker (the bursts take seconds).
        assert sorted(statuses) == [200] * 3 + [429] * (len(statuses) - 3)


def _digests(base: str) -> dict[str, str]:
    """Per worker, the digest of the policy it runs (``gateway_policy_info``)."""
    text = httpx.get(base + "/metrics", timeout=10).text
    return {
        sample.labels["worker"]: sample.labels["digest"]
        for family in text_string_to_metric_families(text)
        if family.name == "gateway_policy_info"
        for sample in family.samples
        if sample.value == 1
    }


def test_sighup_reloads_every_worker(counted: tuple[str, Concurrency], tmp_path: Path) -> None:
    upstream, _ = counted
    quiet = _policy(upstream).replace(
        "{drain_timeout_s: 2}", "{drain_timeout_s: 2, reload_poll_s: 3600}"
    )
    with _served(quiet, tmp_path) as (proc, base):  # only the signal may reload
        before = _digests(base)
        assert set(before) == {"0", "1"}
        assert len(set(before.values())) == 1
        (tmp_path / "policy.yaml").write_text(
            quiet.replace("models:", "models:\n  smart: {pool: main}")
        )
        proc.send_signal(signal.SIGHUP)
        for _ in range(150):
            after = _digests(base)
            if set(after) == {"0", "1"} and set(after.values()).isdisjoint(before.values()):
                break
            proc_wait(proc, 0.2)
        assert set(after) == {"0", "1"}
        assert len(set(after.values())) == 1  # both on the edited policy
        assert set(after.values()).isdisjoint(before.values())


def test_a_policy_that_does_not_load_stops_before_any_worker(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text("backends: []\n")
    args = ["serve", "--policy", str(path), "--port", str(free_port()), "--workers", "2"]
    with gateway_process(args) as proc:
        assert proc.wait(timeout=30) == 1
        assert proc.stdout is not None
        assert "backends" in proc.stdout.read()


def test_the_supervisor_leaves_no_folder_behind(
    counted: tuple[str, Concurrency], tmp_path: Path
) -> None:
    upstream, _ = counted
    shm = Path("/dev/shm")
    before = set(shm.glob("latency-gateway-*")) if shm.is_dir() else set()
    with _served(_policy(upstream), tmp_path) as (proc, _):
        # Its own: other gateways on this host (a benchmark beside the suite) make theirs.
        during = {f for f in set(shm.glob("latency-gateway-*")) - before if _of(f, proc.pid)}
        assert len(during) == 1
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
    assert not any(folder.exists() for folder in during)


def _of(folder: Path, supervisor: int) -> bool:
    """Whether ``folder``'s board is worked by ``supervisor``'s workers."""
    try:
        board = Board.attach(folder)
    except (OSError, ValueError):
        return False  # another gateway's, still being made or gone
    try:
        return any(_parent(pid) == supervisor for pid in board.owners().values())
    finally:
        board.close()


def _parent(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rpartition(")")[2].split()[1])  # the field after the state


def test_while_a_dead_worker_restarts_the_other_takes_every_new_connection(
    counted: tuple[str, Concurrency], tmp_path: Path
) -> None:
    upstream, _ = counted
    with _served(_policy(upstream), tmp_path) as (proc, base):
        workers = _workers_of(proc.pid)
        os.kill(workers[1], signal.SIGKILL)
        # Its replacement is held still: a connection the kernel still gave the dead worker's
        # socket would wait for it (it did, for the seconds a restart takes).
        replacement = _replacement(proc, set(workers))
        os.kill(replacement, signal.SIGSTOP)
        try:
            # A fresh connection each: the kernel spreads them over the listening sockets.
            statuses = [httpx.get(base + "/healthz", timeout=5).status_code for _ in range(20)]
        finally:
            os.kill(replacement, signal.SIGCONT)
        assert statuses == [200] * 20
        _workers_up(base, proc)  # and the replacement serves once it runs


def _replacement(proc: subprocess.Popen[str], before: set[int]) -> int:
    """The worker the supervisor starts in place of a dead one."""
    for _ in range(3000):
        assert proc.poll() is None, "the gateway exited"
        new = set(_workers_of(proc.pid)) - before
        if new:
            return new.pop()
        # Not a sleep for state: the supervisor's restart is a process, not an event here.
        proc_wait(proc, 0.01)
    raise AssertionError("the dead worker was not started again")


def _health_failure(base: str) -> httpx.TransportError | None:
    """How a fresh connection's /healthz failed; None: answered."""
    try:
        httpx.get(base + "/healthz", timeout=20)
    except httpx.TransportError as failed:
        return failed
    return None


@pytest.fixture
def slow() -> Iterator[str]:
    """An upstream whose answers stream for 10 s."""
    with serve(build_fake(FakeConfig(ttft_s=0.05, tokens=200, itl_s=0.05))) as url:
        yield url


def test_while_the_workers_drain_a_new_connection_is_refused_at_once(
    slow: str, tmp_path: Path
) -> None:
    with _served(_policy(slow).replace("drain_timeout_s: 2", "drain_timeout_s: 8"), tmp_path) as (
        proc,
        base,
    ):
        streaming = threading.Event()
        ended = threading.Event()

        def answer() -> None:
            body = {"model": "fast", "messages": [{"role": "user", "content": "hi"}],
                    "stream": True}  # fmt: skip
            with httpx.stream("POST", base + "/v1/chat/completions", json=body, timeout=30) as r:
                for _ in r.iter_bytes():
                    streaming.set()
            ended.set()

        reader = threading.Thread(target=answer)
        reader.start()
        assert streaming.wait(10)
        proc.send_signal(signal.SIGTERM)
        # Refused (or, if it came before the sockets were withdrawn, reset) while the answer
        # in flight still streams: not held until the drain ends, as it was. Answered, only
        # before the supervisor acts on the signal.
        failure = None
        for _ in range(100):
            failure = _health_failure(base)
            if failure is not None:
                break
        assert failure is not None, "still answered"
        assert not isinstance(failure, httpx.TimeoutException)
        assert not ended.is_set()
        reader.join(30)
        assert proc.wait(timeout=30) == 0
