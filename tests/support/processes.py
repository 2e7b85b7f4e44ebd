"""The gateway as a real child process, for tests of signals and the command line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx2 as httpx


def read_until(proc: subprocess.Popen[str], marker: str) -> str:
    """Block on the child's output until a line holds ``marker`` (no polling)."""
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if marker in line:
            return line
    raise AssertionError(f"{marker!r} never printed; output:\n{''.join(seen)}")


def _sigint_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextmanager
def gateway_process(
    args: Sequence[str], cwd: Path | None = None
) -> Iterator[subprocess.Popen[str]]:
    """``python -m gateway ARGS`` with merged, unbuffered text output; stopped (SIGTERM, then
    SIGKILL) on exit. ``serve`` runs one process unless ``--workers`` is given (its default
    is the cores available: the tests of one process's behaviour say so here, once)."""
    if args and args[0] == "serve" and "--workers" not in args:
        args = [*args, "--workers", "1"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "gateway", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        # Ctrl-C reaches it as in a terminal even when the suite runs as a background job
        # (whose children inherit SIGINT ignored: the gateway then exits 0, not 130).
        preexec_fn=_sigint_default,
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
        proc.wait(timeout=15)


def wait_ready(url: str, proc: subprocess.Popen[str]) -> None:
    """Until the gateway at ``url`` answers ``/readyz`` with 200 (it may log nothing)."""
    with httpx.Client(transport=httpx.HTTPTransport(retries=50)) as http:
        for _ in range(100):
            assert proc.poll() is None, "gateway exited"
            try:
                if http.get(url + "/readyz").status_code == 200:
                    return
            except httpx.TransportError:
                pass  # not listening yet
            threading.Event().wait(0.1)  # start-up, not a test assertion on time
    raise AssertionError("gateway never became ready")
