"""Child processes (the demo's simulated fleet; the load tests' servers): start, wait for
health, always stop.

Algorithm: each child runs in its own session (process group) with output to a log file;
readiness is polled over HTTP every ``poll_s`` until every URL answers 200 or
``timeout_s`` passes (or the child exits early). A URL that answers 200 before the child
starts is another process's (a stale one holding the port): that is an error, not readiness,
or the caller would measure or drive the wrong server. Stopping sends SIGINT to the group (a
clean shutdown), then SIGTERM and finally SIGKILL after ``grace_s`` each.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import httpx2 as httpx


class StartupError(RuntimeError):
    """A child process exited or never became healthy."""


def wait_healthy(
    proc: subprocess.Popen[bytes],
    urls: Sequence[str],
    *,
    timeout_s: float = 60.0,
    poll_s: float = 0.2,
) -> None:
    """Block until every URL answers 200; raise if the child dies or time runs out."""
    deadline = time.monotonic() + timeout_s
    pending = list(urls)
    with httpx.Client(timeout=2.0) as http:
        while pending:
            if proc.poll() is not None:
                raise StartupError(f"{proc.args!r} exited with {proc.returncode}")
            if time.monotonic() > deadline:
                raise StartupError(f"not healthy after {timeout_s:.0f}s: {pending}")
            pending = [url for url in pending if not _answers_200(http, url)]
            if pending:
                time.sleep(poll_s)


def _answers_200(http: httpx.Client, url: str) -> bool:
    try:
        return http.get(url).status_code == 200
    except httpx.HTTPError:
        return False


def stop(proc: subprocess.Popen[bytes], grace_s: float = 5.0) -> None:
    """Stop the child's whole process group, escalating from SIGINT to SIGKILL."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        if proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace_s)


@contextlib.contextmanager
def running(
    argv: Sequence[str],
    health_urls: Sequence[str],
    log_path: Path,
    *,
    timeout_s: float = 60.0,
    env: Mapping[str, str] | None = None,
    grace_s: float = 5.0,
) -> Iterator[subprocess.Popen[bytes]]:
    """Start ``argv`` (``env`` added to this process's environment), wait until healthy,
    yield it, and stop it on exit, even on error (``grace_s`` per step of ``stop``)."""
    with httpx.Client(timeout=2.0) as http:
        taken = [url for url in health_urls if _answers_200(http, url)]
    if taken:
        raise StartupError(f"{taken[0]} answers before {argv[0]!r} started: another process "
                           "holds that port")  # fmt: skip
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            list(argv),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=None if env is None else {**os.environ, **env},
        )
        try:
            wait_healthy(proc, health_urls, timeout_s=timeout_s)
            yield proc
        finally:
            stop(proc, grace_s)
