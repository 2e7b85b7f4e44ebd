"""The queued phase: the client leaves while its request waits in the gateway's queue.

One long request (``Holder``) holds the pool's only slot; each trial sends a small request,
scrapes ``/metrics`` back to back (``QueueDepth``, one kept-alive connection) until
``gateway_queue_depth{pool="main"}`` is 1, closes the socket and scrapes until it is 0: the
delay is an upper bound whose resolution is one scrape. A holder with less than a trial's
worth of time left is let finish and replaced. The upstream's counts of generation requests,
compared before each trial and at the start of the next (after the last one:
``FORWARD_GRACE_S`` later), say whether a queued request was forwarded (it must not be).
"""

from __future__ import annotations

import argparse
import http.client
import socket
import threading
import time
from contextlib import suppress

import httptools

from loadtests.cancellation.gateway_process import cancellation_counts
from loadtests.cancellation.raw_client import send
from loadtests.cancellation.trial import ARRIVE_TIMEOUT_S, SETTLE_S, Body, PhaseRun, Trial
from loadtests.cancellation.upstreams import Target

QUEUE_DEPTH = b"gateway_queue_depth{"
POOL = b'pool="main"'
FORWARD_GRACE_S = 0.5  # queued: how long after the last trial a forwarded request would show


class Holder:
    """The long request that holds the pool's only slot; a thread reads (and drops) its answer."""

    def __init__(self, gateway: tuple[str, int], body: Body) -> None:
        self.sock = send(*gateway, body)
        self.sock.settimeout(None)
        self.ended = threading.Event()
        self.status = 0
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def on_message_complete(self) -> None:
        self.ended.set()

    def _read(self) -> None:
        parser = httptools.HttpResponseParser(self)
        try:
            while not self.ended.is_set():
                data = self.sock.recv(65536)
                if not data:
                    break
                parser.feed_data(data)
                self.status = parser.get_status_code()
        except (OSError, httptools.HttpParserError):
            pass
        finally:
            self.ended.set()

    def close(self) -> None:
        with suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the reader
        self.sock.close()
        self._thread.join(5)


class QueueDepth:
    """``gateway_queue_depth{pool="main"}``, summed, read from ``/metrics`` (kept-alive)."""

    def __init__(self, gateway: tuple[str, int]) -> None:
        self._conn = http.client.HTTPConnection(*gateway, timeout=5)

    def read(self) -> tuple[int, float]:
        """The depth and how long the scrape took; reconnects once if the server closed."""
        for attempt in (0, 1):
            sent = time.monotonic()
            try:
                self._conn.request("GET", "/metrics")
                response = self._conn.getresponse()
                body = response.read()
            except (http.client.HTTPException, OSError):
                self._conn.close()
                if attempt:
                    raise
                continue
            took = time.monotonic() - sent
            if response.status != 200:
                raise RuntimeError(f"/metrics answered {response.status}")
            depth = sum(
                float(line.rsplit(b" ", 1)[1])
                for line in body.splitlines()
                if line.startswith(QUEUE_DEPTH) and POOL in line
            )
            return round(depth), took
        raise AssertionError("unreachable")

    def wait_for(self, depth: int, bound_s: float) -> tuple[float, float] | None:
        """Scrape back to back until the depth is ``depth``: (when the answer came, its
        scrape's duration), or ``None`` after ``bound_s``."""
        deadline = time.monotonic() + bound_s
        while True:
            seen, took = self.read()
            now = time.monotonic()
            if seen == depth:
                return now, took
            if now > deadline:
                return None

    def close(self) -> None:
        self._conn.close()


def one_queued(
    gateway: tuple[str, int], target: Target, queue: QueueDepth, bound_s: float
) -> tuple[Trial, tuple[int, ...]]:
    """One queued trial and the upstream's counts before it (for the forwarded check)."""
    before = target.received()
    sock = send(*gateway, target.body("queued"))
    try:
        if queue.wait_for(1, ARRIVE_TIMEOUT_S) is None:
            raise RuntimeError("the request never showed in the gateway's queue")
        t0 = time.monotonic()
    finally:
        sock.close()
    seen = queue.wait_for(0, bound_s)
    if seen is None:
        # Not gone within the bound: it must be gone before the next trial.
        if queue.wait_for(0, SETTLE_S) is None:
            raise RuntimeError("a request whose client left stays in the gateway's queue")
        return Trial(None), before
    return Trial(seen[0] - t0, poll_s=seen[1]), before


def start_holder(
    gateway: tuple[str, int], target: Target, queue: QueueDepth, old: Holder | None
) -> Holder:
    """Let ``old`` finish (closing it would count a cancellation), then send a new holder and
    wait until the upstream has it and the gateway's queue is empty (it holds the slot)."""
    if old is not None:
        if not old.ended.wait(max(0.0, target.holder_left_s()) + SETTLE_S):
            raise RuntimeError("the holder did not finish")
        old.close()
        if old.status != 200:
            raise RuntimeError(f"the holder ended with status {old.status}")
    before = target.received()
    target.start_holder()
    holder = Holder(gateway, target.holder_body())
    deadline = time.monotonic() + ARRIVE_TIMEOUT_S
    while not all(n > b for n, b in zip(target.received(), before, strict=True)):
        if holder.ended.is_set() or time.monotonic() > deadline:
            holder.close()
            raise RuntimeError(f"the holder never reached the upstream (status {holder.status})")
        time.sleep(0.005)
    if queue.wait_for(0, ARRIVE_TIMEOUT_S) is None:
        holder.close()
        raise RuntimeError("the holder did not get the pool's slot")
    return holder


def run_queued(
    gateway: tuple[str, int], target: Target, args: argparse.Namespace
) -> tuple[PhaseRun, dict[str, int]]:
    """The queued phase on a gateway whose pool takes one request at a time; also the
    gateway's cancellation counts, read while the holder still holds the slot."""
    run = PhaseRun(target.name, "queued")
    began = time.monotonic()
    margin = ARRIVE_TIMEOUT_S + args.bound_s + 1.0  # longer than any one trial
    queue = QueueDepth(gateway)
    holder: Holder | None = None
    pending: tuple[Trial, tuple[int, ...]] | None = None
    misses = 0
    try:
        for _ in range(args.trials):
            if pending is not None:  # the previous trial: did its request reach the upstream?
                pending[0].forwarded = target.received() != pending[1]
            if holder is None or holder.ended.is_set() or target.holder_left_s() < margin:
                holder = start_holder(gateway, target, queue, holder)
                run.holders += 1
            pending = one_queued(gateway, target, queue, args.bound_s)
            if holder.ended.is_set():
                raise RuntimeError(f"the holder ended during a trial (status {holder.status})")
            run.trials.append(pending[0])
            misses += pending[0].delay_s is None
            if misses >= args.max_misses:
                run.stopped_early = True
                break
        if pending is not None:
            time.sleep(FORWARD_GRACE_S)
            pending[0].forwarded = target.received() != pending[1]
        run.seconds = time.monotonic() - began
        counts = cancellation_counts(gateway)
    finally:
        queue.close()
        if holder is not None:
            holder.close()
    return run, counts
