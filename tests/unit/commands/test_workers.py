"""``serve --workers``: its default, its argument, the listening sockets."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from gateway.commands.cli import command_line
from gateway.commands.workers import (
    MAX_DEFAULT_WORKERS,
    bind,
    cgroup_cores,
    default_workers,
    host_folder,
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
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
    finally:
        first.close()
        second.close()


def test_the_host_folder_is_private() -> None:
    folder = host_folder()
    try:
        assert folder.is_dir()
        assert folder.stat().st_mode & 0o777 == 0o700
    finally:
        folder.rmdir()
