"""``serve --workers``: its default, its argument, the listening sockets, a dead worker's."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import cast

import pytest

from gateway.commands.cli import command_line
from gateway.commands.workers import (
    MAX_DEFAULT_WORKERS,
    STARTUP_FAILURE,
    Supervisor,
    WorkerSettings,
    bind,
    bind_all,
    cgroup_cores,
    default_workers,
    host_folder,
    withdraw,
)


def test_the_default_is_the_cores_available_capped(tmp_path: Path) -> None:
    none = tmp_path / "absent"
    assert default_workers(none) == min(len(os.sched_getaffinity(0)), MAX_DEFAULT_WORKERS)
    one_core = tmp_path / "cpu.max"
    one_core.write_text("100000 100000\n")
    assert default_workers(one_core) == 1


@pytest.mark.parametrize(
    ("text", "cores"),
    [("max 100000\n", None), ("150000 100000\n", 2), ("50000 100000\n", 1), ("", None)],
)
def test_a_cgroup_quota_caps_the_cores(tmp_path: Path, text: str, cores: int | None) -> None:
    path = tmp_path / "cpu.max"
    path.write_text(text)
    assert cgroup_cores(path) == cores


@pytest.mark.parametrize(("given", "ok"), [("1", True), ("4", True), ("0", False), ("x", False)])
def test_workers_must_be_a_positive_whole_number(
    given: str, ok: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["serve", "--policy", "p.yaml", "--workers", given]
    if ok:
        assert command_line(argv).workers == int(given)
    else:
        with pytest.raises(SystemExit):
            command_line(argv)
        assert "at least 1" in capsys.readouterr().err


def test_no_workers_given_leaves_the_default_to_serve() -> None:
    assert command_line(["serve", "--policy", "p.yaml"]).workers is None


def test_every_worker_gets_its_own_socket_on_the_one_port() -> None:
    first = bind("127.0.0.1", 0)
    port = first.getsockname()[1]
    second = bind("127.0.0.1", port)
    try:
        assert second.getsockname()[1] == port
        # Bound, not listening: no connection waits for a worker that does not serve yet.
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
        first.listen(8)  # as its worker's server does once it serves
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
    finally:
        first.close()
        second.close()


def _accepted(sock: socket.socket) -> int:
    """The connections waiting in a listening socket's queue, accepted and closed."""
    sock.setblocking(False)
    count = 0
    while True:
        try:
            conn, _ = sock.accept()
        except BlockingIOError:
            return count
        conn.close()
        count += 1


def _connect(port: int, count: int) -> list[socket.socket]:
    return [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(count)]


@contextmanager
def _pair() -> Iterator[tuple[socket.socket, socket.socket, int]]:
    """Two workers' sockets on one port, both listening."""
    first, second = bind_all("127.0.0.1", 0, 2)
    port = first.getsockname()[1]
    assert second.getsockname()[1] == port
    first.listen(128)
    second.listen(128)
    try:
        yield first, second, port
    finally:
        first.close()
        second.close()


def test_a_withdrawn_socket_gets_no_connection_until_it_listens_again() -> None:
    with _pair() as (dead, alive, port):
        clients = _connect(port, 40)
        assert _accepted(dead) > 0  # the kernel spreads them
        assert _accepted(alive) > 0
        withdraw(dead)
        clients += _connect(port, 40)
        assert _accepted(alive) == 40  # every new one, none left waiting on the dead one
        dead.listen(128)  # its restarted worker serves
        clients += _connect(port, 40)
        assert _accepted(dead) > 0
        for client in clients:
            client.close()


def test_withdrawing_a_socket_that_never_listened_does_nothing() -> None:
    sock = bind("127.0.0.1", 0)
    try:
        withdraw(sock)
        sock.listen(8)  # it can still serve
    finally:
        sock.close()


class _Dead:
    """A worker process that has exited."""

    pid = 4242
    sentinel = -1

    def __init__(self, exitcode: int) -> None:
        self.exitcode = exitcode

    def is_alive(self) -> bool:
        return False

    def join(self) -> None:
        return None


@pytest.mark.parametrize(
    ("exitcode", "code", "restarted"), [(-9, None, [1]), (STARTUP_FAILURE, 1, [])]
)
def test_a_dead_workers_socket_is_withdrawn_before_it_is_started_again(
    exitcode: int, code: int | None, restarted: list[int]
) -> None:
    with _pair() as (first, second, port):
        settings = WorkerSettings("p.yaml", "/nowhere", "info", "127.0.0.1", port)
        supervisor = Supervisor(settings, [first, second], drain_s=1.0)
        started: list[int] = []
        supervisor._start = started.append  # type: ignore[method-assign,assignment]
        supervisor._processes = [None, cast(BaseProcess, _Dead(exitcode))]
        assert supervisor._restart_dead() == code
        assert started == restarted
        clients = _connect(port, 20)
        assert _accepted(first) == 20  # the dead worker's socket gets none
        for client in clients:
            client.close()


def test_the_host_folder_is_private() -> None:
    folder = host_folder()
    try:
        assert folder.is_dir()
        assert folder.stat().st_mode & 0o777 == 0o700
    finally:
        folder.rmdir()
