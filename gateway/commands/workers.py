"""``latency-gateway serve --workers N``: N processes on one port that are one gateway.

The supervisor (the process that was started) makes the host's folder (under ``/dev/shm``
where the host has it) with the host board (``gateway/host/board.py``: every worker's
backend loads, admission slots and rate-limit buckets), binds the port N times (one socket
per worker, ``SO_REUSEPORT``: the kernel spreads new connections evenly over the listening
ones by their addresses' hash, where one shared socket hands most of them to whichever
worker is awake, which keep-alive clients then stay on) and starts N workers, each a fresh
interpreter (``spawn``) that attaches to the board, claims a row, builds the app on the
policy file and serves its socket with uvicorn as one process would. A socket listens only
from when its worker serves (uvicorn's server calls ``listen``; the supervisor only binds,
which reports a port in use at once): the kernel gives connections to listening sockets
only, so none waits for a worker that is still starting. It then only watches:

- a worker that dies has its socket withdrawn at once (``withdraw``: ``shutdown`` stops a
  listening socket listening and resets the connections that waited in its queue, which
  their clients can retry, while the port stays bound): without it the kernel kept giving
  that socket a share of the new connections, which waited seconds for the restarted worker.
  The worker is then started again on the same socket, which listens again once it serves
  (its row is freed: what it held stops counting); one that could not start (exit
  ``STARTUP_FAILURE``: a policy that does not load, say) stops the whole gateway instead of
  looping;
- SIGINT or SIGTERM withdraws every socket (new connections are refused at once, as one
  process refuses them while it drains; the supervisor's copies kept them listening, and a
  new connection waited for the drain's end) and goes to every worker, which drains as one
  process does (the policy's ``server.drain_timeout_s``); a worker still running
  ``KILL_MARGIN_S`` after that is killed, then the folder is removed;
- SIGHUP goes to every worker, each reloading its policy file.

Every worker hashes strings alike (``PYTHONHASHSEED``, random per start, is set for them),
so their prefix-index block hashes agree (``scheduling/prefix_index.py``).

Parameters: ``workers`` (N), ``KILL_MARGIN_S``, ``RESTART_BACKOFF_S`` (between restarts of
a worker that keeps dying), ``WATCH_S``.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import gc
import logging
import math
import multiprocessing
import multiprocessing.connection
import os
import secrets
import shutil
import signal
import socket
import sys
import tempfile
import time
from dataclasses import dataclass
from multiprocessing.process import BaseProcess
from pathlib import Path
from types import FrameType

from gateway.access_log import ACCESS_LOGGER, write_in_background
from gateway.commands.process import configure_logging, load_or_report, run_uvicorn
from gateway.host.board import Board

log = logging.getLogger(__name__)

STARTUP_FAILURE = 3  # a worker's exit code when it could not start serving
KILL_MARGIN_S = 5.0
RESTART_BACKOFF_S = 1.0
WATCH_S = 1.0  # the supervisor's look when nothing woke it
MAX_DEFAULT_WORKERS = 8
PR_SET_PDEATHSIG = 1


def default_workers(cpu_max: Path = Path("/sys/fs/cgroup/cpu.max")) -> int:
    """The cores this process may run on (its CPU affinity, and its cgroup's CPU quota where
    one is set, as in a container with a CPU limit), at most ``MAX_DEFAULT_WORKERS``."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    quota = cgroup_cores(cpu_max)
    if quota is not None:
        cores = min(cores, quota)
    return max(1, min(cores, MAX_DEFAULT_WORKERS))


def cgroup_cores(cpu_max: Path) -> int | None:
    """The whole cores a cgroup v2 ``cpu.max`` (``"<quota> <period>"`` or ``"max ..."``)
    allows, rounded up; None without a quota."""
    try:
        quota, period = cpu_max.read_text().split()[:2]
        return max(1, math.ceil(int(quota) / int(period)))
    except (OSError, ValueError):
        return None  # no file, "max", or not cgroup v2


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    """What a worker needs to start (sent to it when it is spawned)."""

    policy_path: str
    folder: str
    log_level: str
    host: str  # for the log's "running on" line (the socket is bound already)
    port: int


def host_folder() -> Path:
    """A new private folder for the board and the workers' sockets (in memory if it can)."""
    shm = Path("/dev/shm")
    base = str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None
    return Path(tempfile.mkdtemp(prefix="latency-gateway-", dir=base))


def bind(host: str, port: int) -> socket.socket:
    """One worker's socket bound to ``host:port`` (others may bind the same port); not
    listening yet: its worker's server listens once it serves."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def bind_all(host: str, port: int, count: int) -> list[socket.socket]:
    """``count`` sockets bound to ``host:port``; port 0: one the kernel picks, named
    explicitly to each (a socket given an ephemeral port loses it when withdrawn, and would
    listen again on another)."""
    if port == 0:
        with bind(host, 0) as probe:
            return bind_all(host, probe.getsockname()[1], count)
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sockets.append(bind(host, port))
    except OSError:
        for sock in sockets:
            sock.close()
        raise
    return sockets


def withdraw(sock: socket.socket) -> None:
    """Stop ``sock`` listening (the connections waiting in its queue are reset); it stays
    bound, and listens again when a server starts on it. Nothing for a socket that does not
    listen (its worker died before it served)."""
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def serve_workers(
    policy_path: str, *, host: str, port: int, log_level: str, workers: int, drain_s: float
) -> int:
    """Run ``workers`` worker processes on ``host:port`` until SIGINT/SIGTERM; the exit code."""
    folder = host_folder()
    board = Board.create(folder, rows=2 * workers)
    sockets: list[socket.socket] = []
    try:
        sockets = bind_all(host, port, workers)
    except OSError as exc:
        for sock in sockets:
            sock.close()
        board.close()
        shutil.rmtree(folder, ignore_errors=True)
        print(f"serve: cannot listen on {host}:{port}: {exc}", file=sys.stderr)
        return 1
    # The same string hashes in every worker (prefix blocks), random per start.
    os.environ["PYTHONHASHSEED"] = str(secrets.randbelow(2**32))
    settings = WorkerSettings(str(policy_path), str(folder), log_level, host, port)
    supervisor = Supervisor(settings, sockets, drain_s)
    try:
        return supervisor.run()
    finally:
        for sock in sockets:
            sock.close()
        board.close()
        shutil.rmtree(folder, ignore_errors=True)


class Supervisor:
    def __init__(
        self, settings: WorkerSettings, sockets: list[socket.socket], drain_s: float
    ) -> None:
        self._settings = settings
        self._sockets = sockets  # one per worker
        self._context = multiprocessing.get_context("spawn")
        self._processes: list[BaseProcess | None] = [None] * len(sockets)
        self._started_at = [0.0] * len(sockets)
        self._drain_s = drain_s
        self._signals: list[int] = []

    def _start(self, index: int) -> None:
        process = self._context.Process(
            target=run_worker,
            args=(self._settings, self._sockets[index]),
            name=f"gateway-worker-{index}",
        )
        process.start()
        self._processes[index] = process
        self._started_at[index] = time.monotonic()
        log.info("worker %d started (pid %s)", index, process.pid)

    def run(self) -> int:
        def note(signum: int, frame: FrameType | None) -> None:
            self._signals.append(signum)

        handled = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
        previous = {sig: signal.signal(sig, note) for sig in handled}
        # A signal also writes a byte here, which wakes the watch at once.
        woken, waker = socket.socketpair()
        waker.setblocking(False)
        woken.setblocking(False)
        previous_fd = signal.set_wakeup_fd(waker.fileno())
        try:
            for index in range(len(self._processes)):
                self._start(index)
            code = self._watch(woken)
            self._stop_all()
            return code
        finally:
            signal.set_wakeup_fd(previous_fd)
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            woken.close()
            waker.close()

    def _watch(self, woken: socket.socket) -> int:
        while True:
            while self._signals:
                sig = self._signals.pop(0)
                if sig == signal.SIGHUP:
                    self._send(signal.SIGHUP)
                else:
                    return 0
            code = self._restart_dead()
            if code is not None:
                return code
            # Woken at once by a worker's death (its sentinel) or a signal (``woken``).
            sentinels = [p.sentinel for p in self._processes if p is not None]
            multiprocessing.connection.wait([*sentinels, woken], timeout=WATCH_S)
            with contextlib.suppress(BlockingIOError):
                woken.recv(4096)

    def _restart_dead(self) -> int | None:
        """Withdraw the socket of every worker that died and start it again; the gateway's
        exit code when one could not start (None: go on)."""
        for index, process in enumerate(self._processes):
            if process is None or process.is_alive():
                continue
            withdraw(self._sockets[index])
            process.join()
            if process.exitcode == STARTUP_FAILURE:
                log.error("worker %d could not start; stopping the gateway", index)
                return 1
            log.warning("worker %d (pid %s) died (exit %s); socket withdrawn, starting it again",
                        index, process.pid, process.exitcode)  # fmt: skip
            if time.monotonic() - self._started_at[index] < RESTART_BACKOFF_S:
                time.sleep(RESTART_BACKOFF_S)
            self._start(index)
        return None

    def _send(self, sig: int) -> None:
        for process in self._processes:
            if process is not None and process.pid is not None and process.is_alive():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(process.pid, sig)

    def _stop_all(self) -> None:
        # New connections are refused from now, as one process's are while it drains: the
        # sockets the supervisor holds would otherwise listen on, their connections waiting
        # until the drain ended.
        for sock in self._sockets:
            withdraw(sock)
        self._send(signal.SIGTERM)
        deadline = time.monotonic() + self._drain_s + KILL_MARGIN_S
        for process in self._processes:
            if process is None:
                continue
            process.join(max(0.0, deadline - time.monotonic()))
            if process.is_alive():
                log.warning("worker pid %s still running after the drain; killing it", process.pid)
                process.kill()
                process.join()


def _die_with_the_supervisor() -> None:
    """Linux: this worker gets SIGTERM when its supervisor dies, however it died (a worker
    left behind would hold its socket with nobody to stop it)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() == 1:  # it died before the call
        os.kill(os.getpid(), signal.SIGTERM)


def run_worker(settings: WorkerSettings, sock: socket.socket) -> None:
    """A worker's life: attach to the board, build the app, serve on ``sock`` until told to
    stop (exit ``STARTUP_FAILURE`` when it cannot start)."""
    _die_with_the_supervisor()
    configure_logging(settings.log_level)
    policy = load_or_report(settings.policy_path)
    if policy is None:
        sys.exit(STARTUP_FAILURE)
    from gateway.app import build_app

    board = Board.attach(Path(settings.folder))
    board.claim_row()
    access = write_in_background(logging.getLogger(ACCESS_LOGGER), sys.stdout)
    app = build_app(policy, policy_path=settings.policy_path, board=board)
    gc.collect()
    gc.freeze()
    try:
        run_uvicorn(
            app,
            policy,
            host=settings.host,
            port=settings.port,
            sock=sock,
            log_level=settings.log_level,
        )
    finally:
        access.stop()
        board.release_row()
