"""Active health checks: probe every backend on an interval, eject and restore by streaks.

Algorithm: a backend becomes unhealthy after ``failures_to_eject`` consecutive failed probes
(or failed connections seen by the proxy) and healthy again after ``successes_to_restore``
consecutive good probes. The probe path depends on the engine: ``/health`` for vLLM, TGI and
llama.cpp, ``/v1/models`` for other OpenAI-compatible servers, each below the backend's root
prefix and sent as requests are (``probe.py``). Why a probe fails is logged when the reason
appears or changes, not on every probe. Load is read apart (``load_watch.py``).

Parameters (policy ``health``): ``interval_s``, ``timeout_s``, ``failures_to_eject``,
``successes_to_restore``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from gateway.backends.probe import ProbeFailed, ProblemLog, probe_get
from gateway.backends.state import BackendState, Health
from gateway.policy.compile import CompiledPolicy
from gateway.schema import Engine
from gateway.schema import Health as HealthSettings
from gateway.upstream import ConnectionPool

log = logging.getLogger(__name__)

_PROBE_PATH = {
    Engine.VLLM: "/health",
    Engine.TGI: "/health",
    Engine.OPENAI: "/v1/models",
    Engine.LLAMACPP: "/health",  # 503 while the model loads, 200 once it serves
}


def record_probe(state: BackendState, ok: bool, settings: HealthSettings) -> Health:
    """Fold one probe result into ``state``; return the new health."""
    if ok:
        state.successes += 1
        state.failures = 0
        if state.health is not Health.HEALTHY and (
            state.health is Health.UNKNOWN or state.successes >= settings.successes_to_restore
        ):
            state.health = Health.HEALTHY
    else:
        state.failures += 1
        state.successes = 0
        if state.failures >= settings.failures_to_eject or state.health is Health.UNKNOWN:
            state.health = Health.UNHEALTHY
    return state.health


class HealthChecker:
    """Probes every backend of the current policy, forever, on the policy's interval."""

    def __init__(
        self,
        pool: ConnectionPool,
        current_policy: Callable[[], CompiledPolicy],
        states: Callable[[], list[BackendState]],
        on_change: Callable[[BackendState], None],
    ) -> None:
        self._pool = pool
        self._policy = current_policy
        self._states = states
        self._on_change = on_change
        self.problems = ProblemLog(log, "health probe")

    async def run(self) -> None:
        """Probe forever; the first round is the caller's (``probe_all`` before serving)."""
        while True:
            await asyncio.sleep(self._policy().source.health.interval_s)
            await self.probe_all()

    async def probe_all(self) -> None:
        states = self._states()
        await asyncio.gather(*(self._probe(s) for s in states))

    async def _probe(self, state: BackendState) -> None:
        settings = self._policy().source.health
        problem = await self._problem(state, settings.timeout_s)
        self.problems.note(state.name, problem)
        before = state.health
        after = record_probe(state, problem is None, settings)
        if after is not before:
            log.info("backend %s is now %s", state.name, after.value)
            self._on_change(state)

    async def _problem(self, state: BackendState, timeout_s: float) -> ProbeFailed | None:
        """None when the backend is up, else why not."""
        # Hosted OpenAI-compatible APIs want their key on /v1/models too (probe_get sends it).
        try:
            path, redactor = _PROBE_PATH[state.spec.engine], self._policy().redactor
            await probe_get(self._pool, state.spec, path, timeout_s, redactor)
        except ProbeFailed as exc:
            return exc
        return None
