"""Async real-time driver of one engine.

Algorithm: one task per replica. While the engine has work it calls ``engine.step()``
(scheduling happens at step start), sleeps until the step's simulated end and then hands each
request its new tokens. Step ends are chained (``start = previous end``) so event-loop
jitter does not slow the simulated GPU down, unless the driver lags more than ``max_lag_s``
behind, when it resynchronises to now. An idle engine waits on an event set by ``submit``:
no polling, no per-token work beyond one queue item per request per step. ``abort`` drops the
request from the engine at once and wakes its consumer, whose ``outputs()`` then raises
``RequestAborted`` instead of waiting for tokens that will never come.

Parameters: the engine, a ``Clock``, an optional ``Observer`` (metrics), ``max_lag_s``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Protocol

from loadtests.sim.clock import Clock
from loadtests.sim.engine import Engine, EngineRequest, StepResult


class RequestAborted(Exception):
    """The request was aborted (e.g. its client went away) while its outputs were awaited."""


@dataclass(frozen=True)
class Output:
    """Tokens a request gained in one step; ``finish_reason`` is set on the last one."""

    new_tokens: int
    finish_reason: str | None


_WAKE = Output(0, None)  # queued on abort so a waiting consumer notices at once


@dataclass(eq=False)
class RequestStream:
    """Per-request view of the engine: timestamps and a queue of outputs."""

    request_id: str
    prompt_tokens: int
    max_tokens: int
    arrival: float
    admitted: float | None = None
    cached_tokens: int = 0
    first_token: float | None = None
    last_token: float | None = None
    completion_tokens: int = 0
    finish_reason: str | None = None
    aborted: bool = False
    queue: asyncio.Queue[Output] = field(default_factory=asyncio.Queue)

    async def outputs(self) -> AsyncIterator[Output]:
        """Outputs until the last one; raises ``RequestAborted`` once the request is aborted."""
        while True:
            out = await self.queue.get()
            if self.aborted:
                raise RequestAborted(self.request_id)
            yield out
            if out.finish_reason is not None:
                return


class Observer(Protocol):
    def on_tokens(self, stream: RequestStream, n: int, gap_s: float, first: bool) -> None: ...

    def on_finished(self, stream: RequestStream, now: float) -> None: ...

    def on_aborted(self, stream: RequestStream, now: float) -> None: ...


class EngineDriver:
    """Runs an ``Engine`` against a ``Clock`` and routes its outputs to request streams."""

    def __init__(
        self,
        engine: Engine,
        clock: Clock,
        *,
        observer: Observer | None = None,
        max_lag_s: float = 0.05,
    ) -> None:
        self.engine = engine
        self.clock = clock
        self.observer = observer
        self.max_lag_s = max_lag_s
        self._streams: dict[str, RequestStream] = {}
        self._wake = asyncio.Event()
        self._changed = asyncio.Event()

    def submit(self, req: EngineRequest) -> RequestStream:
        """Queue a request (raises ``ValueError`` if the engine refuses it)."""
        self.engine.add_request(req)
        stream = RequestStream(
            req.request_id, len(req.prompt_token_ids), req.max_tokens, self.clock.now()
        )
        self._streams[req.request_id] = stream
        self._wake.set()
        return stream

    def abort(self, request_id: str) -> bool:
        """Abort a request in any phase (waiting, prefill, decode); wake its consumer."""
        stream = self._streams.pop(request_id, None)
        aborted = self.engine.abort(request_id)
        if stream is not None:
            stream.aborted = True
            stream.queue.put_nowait(_WAKE)
            if self.observer is not None:
                self.observer.on_aborted(stream, self.clock.now())
        self._changed.set()
        return aborted

    async def wait_until(self, predicate: Callable[[], bool]) -> None:
        """Return once ``predicate()`` holds, re-checking after every step and abort."""
        while not predicate():
            self._changed.clear()
            await self._changed.wait()

    async def run(self) -> None:
        last_end: float | None = None
        while True:
            if not self.engine.has_work():
                self._wake.clear()
                await self._wake.wait()
                last_end = None
                continue
            now = self.clock.now()
            start = now if last_end is None or now - last_end > self.max_lag_s else last_end
            result = self.engine.step()
            end = start + result.duration_s
            self._note_admissions(result, start)
            await self.clock.sleep_until(end)
            last_end = end
            self._deliver(result, end)
            self._changed.set()

    def _note_admissions(self, result: StepResult, start: float) -> None:
        for rid, cached in result.admitted.items():
            stream = self._streams.get(rid)
            if stream is not None:
                stream.admitted = start
                stream.cached_tokens = cached

    def _deliver(self, result: StepResult, now: float) -> None:
        for rid, n in result.emitted.items():
            stream = self._streams.get(rid)
            if stream is None:
                continue  # aborted while the step ran
            first = stream.first_token is None
            gap = now - (stream.arrival if first else stream.last_token or now)
            if first:
                stream.first_token = now
            stream.last_token = now
            stream.completion_tokens += n
            reason = result.finished.get(rid)
            if self.observer is not None:
                self.observer.on_tokens(stream, n, gap, first)
            if reason is not None:
                stream.finish_reason = reason
                del self._streams[rid]
                if self.observer is not None:
                    self.observer.on_finished(stream, now)
            stream.queue.put_nowait(Output(n, reason))
