"""Active health checks: probe every backend on an interval, eject and restore by streaks.

Algorithm: a backend becomes unhealthy after ``failures_to_eject`` consecutive failed probes
(or failed connections seen by the proxy) and healthy again after ``successes_to_restore``
consecutive good probes. The probe path depends on the engine: ``/health`` for vLLM, TGI and
llama.cpp, ``/v1/models`` for other OpenAI-compatible servers. Load is read apart
(``load_watch.py``).

Parameters (policy ``health``): ``interval_s``, ``timeout_s``, ``failures_to_eject``,
``successes_to_restore``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import httpx2 as httpx

from gateway.backends.state import BackendState, Health
from gateway.policy.compile import CompiledPolicy
from gateway.policy.schema import Engine
from gateway.policy.schema import Health as HealthSettings

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
        client: httpx.AsyncClient,
        current_policy: Callable[[], CompiledPolicy],
        states: Callable[[], list[BackendState]],
        on_change: Callable[[BackendState], None],
    ) -> None:
        self._client = client
        self._policy = current_policy
        self._states = states
        self._on_change = on_change

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
        ok = await self._is_up(state, settings.timeout_s)
        before = state.health
        after = record_probe(state, ok, settings)
        if after is not before:
            log.info("backend %s is now %s", state.name, after.value)
            self._on_change(state)

    async def _is_up(self, state: BackendState, timeout_s: float) -> bool:
        url = state.spec.url + _PROBE_PATH[state.spec.engine]
        key = state.spec.api_key
        # Hosted OpenAI-compatible APIs want their key on /v1/models too.
        headers = dict([key.authorization()]) if key is not None else None
        try:
            response = await self._client.get(url, timeout=timeout_s, headers=headers)
        except httpx.HTTPError:
            return False
        return response.status_code == 200
