"""A worker of ``serve --workers N`` among its siblings: what it runs beside its requests, and
the host-wide answers of ``/metrics``, the dashboard and ``/admin/reload``.

While the app runs, a worker with a host board (``Gateway.board``):

- answers its siblings on its socket (``host/peers.py``): ``metrics`` (its Prometheus text),
  ``snapshot`` (its dashboard figures), ``reload`` (reload its policy file; the result);
- every ``TICK_S`` while it has waiters, else every ``IDLE_TICK_S`` (and as soon as a
  request starts waiting, ``Gateway.host_wake``), shows its pools' queues and rates on the
  board and hands slots that its siblings gave back to its own waiters (a sibling's release
  wakes nobody here); the cost is one wake-up per tick and, per pool, a few stores and,
  with waiters, a ``dispatch``: 10 wake-ups a second while no request waits, so an
  unsaturated worker pays next to nothing for it;
- every ``SWEEP_S`` frees the board rows of workers that are gone (what they held stops
  counting);
- on exit, gives its row back.

``whole_metrics``, ``whole_snapshot`` and ``reload_everywhere`` are the host's: this worker's
and its siblings' (those that answer within ``ASK_TIMEOUT_S``), each worker's Prometheus
series labelled ``worker``. Without a board they are this process's alone.

Parameters: ``TICK_S`` (10 ms), ``IDLE_TICK_S`` (100 ms), ``SWEEP_S`` (1 s),
``ASK_TIMEOUT_S`` (2 s).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import orjson
from prometheus_client import generate_latest

from gateway.dashboard.snapshot import snapshot
from gateway.dashboard.snapshot_wire import combined, decoded, encoded
from gateway.dashboard.window import Snapshot
from gateway.host.board import Board
from gateway.host.metrics_merge import merge
from gateway.host.peers import answering, ask_siblings
from gateway.policy.reload import ReloadResult
from gateway.runtime.parts import Gateway

log = logging.getLogger(__name__)

TICK_S = 0.01
IDLE_TICK_S = 0.1
SWEEP_S = 1.0
ASK_TIMEOUT_S = 2.0


@contextlib.asynccontextmanager
async def host_worker(gateway: Gateway) -> AsyncIterator[None]:
    """Run this worker's part of the host (nothing without a board)."""
    board = gateway.board
    if board is None:
        yield
        return

    async def metrics() -> bytes:
        return generate_latest(gateway.metrics.registry)

    async def snap() -> bytes:
        return encoded(own_snapshot(gateway, gateway.clock()))

    async def reload() -> bytes:
        return orjson.dumps(_result(await gateway.holder.reload()))

    handlers = {"metrics": metrics, "snapshot": snap, "reload": reload}
    async with answering(board, handlers):
        tick = asyncio.create_task(_tick(gateway, board), name="host-tick")
        try:
            yield
        finally:
            tick.cancel()
            await asyncio.gather(tick, return_exceptions=True)
            board.release_row()


async def _tick(gateway: Gateway, board: Board) -> None:
    swept = gateway.clock()
    while True:
        waiting = False
        for admission in list(gateway.admissions.values()):
            admission.publish()
            if admission.queue:
                admission.dispatch()
                waiting = waiting or bool(admission.queue)
        now = gateway.clock()
        if now - swept >= SWEEP_S:
            swept = now
            gone = board.sweep()
            if gone:
                log.warning("workers gone from the host board (rows %s): their load is freed", gone)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(TICK_S if waiting else IDLE_TICK_S):
                await gateway.host_wake.wait()
        gateway.host_wake.clear()


async def whole_metrics(gateway: Gateway) -> bytes:
    """The host's Prometheus text: every worker's series, labelled ``worker``."""
    own = generate_latest(gateway.metrics.registry)
    board = gateway.board
    if board is None:
        return own
    answers = await ask_siblings(board, "metrics", ASK_TIMEOUT_S)
    texts = {str(board.row): own.decode(), **{str(r): a.decode() for r, a in answers.items()}}
    return merge(dict(sorted(texts.items(), key=lambda item: int(item[0])))).encode()


def own_snapshot(gateway: Gateway, at: float) -> Snapshot:
    """This worker's dashboard figures at ``at``, what happens after dispatch included."""
    return snapshot(gateway.metrics, at, gateway.recovery.instruments())


async def whole_snapshot(gateway: Gateway) -> Snapshot:
    """The host's dashboard figures now: every worker's added up."""
    now = gateway.clock()
    own = own_snapshot(gateway, now)
    if gateway.board is None:
        return own
    answers = await ask_siblings(gateway.board, "snapshot", ASK_TIMEOUT_S)
    return combined(now, [own, *(decoded(raw) for raw in answers.values())])


async def reload_everywhere(gateway: Gateway) -> tuple[ReloadResult, dict[str, Any]]:
    """Reload this worker's policy, then every sibling's; this one's result and, by worker,
    what each did (``{}`` without siblings)."""
    result = await gateway.holder.reload()
    board = gateway.board
    if board is None:
        return result, {}
    answers = await ask_siblings(board, "reload", ASK_TIMEOUT_S)
    workers = {str(board.row): _result(result)}
    workers.update({str(row): orjson.loads(raw) for row, raw in answers.items()})
    return result, dict(sorted(workers.items(), key=lambda item: int(item[0])))


def _result(result: ReloadResult) -> dict[str, Any]:
    status = ("reloaded" if result.changed else "unchanged") if result.ok else "refused"
    return {"status": status, "digest": result.digest, "error": result.error}
