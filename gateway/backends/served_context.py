"""The context length each backend serves, read from its ``/v1/models`` where it says it.

Algorithm: vLLM (and SGLang) list the served model in ``GET /v1/models`` with
``max_model_len``, the longest prompt plus completion it takes. Each healthy backend of an
engine that may say it (``vllm``, ``openai``) is asked once per (name, URL, served model):
right after the first health probes, before the gateway serves, then every ``interval_s``
for the backends not asked yet (one that was down at start, one a reload added). An answer
without the field, or a failure, is not asked again (a failure is asked again next round).
What was learned is handed to ``on_learned`` (backend name -> tokens); the gateway applies
it to its policy (``policy/served_limits.py``), so a prompt too long for every replica of a
pool is refused at once with ``context_length_exceeded``, not sent to be refused there.

Parameters: ``interval_s`` (the policy's health interval).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping

import orjson

from gateway.backends.probe import ProbeFailed, probe_get
from gateway.backends.state import BackendState, Health
from gateway.policy.compile import BackendSpec, CompiledPolicy
from gateway.schema import Engine
from gateway.upstream import ConnectionPool

log = logging.getLogger(__name__)

_ASKED_OF = (Engine.VLLM, Engine.OPENAI)
Key = tuple[str, str, str]  # backend name, URL, served model


def served_context(body: bytes, model: str) -> int | None:
    """``max_model_len`` of ``model``'s card in a ``/v1/models`` answer (of its only card
    when none has its name), if it is a positive integer."""
    try:
        data = orjson.loads(body).get("data")
    except (orjson.JSONDecodeError, AttributeError):
        return None
    cards = [c for c in data if isinstance(c, dict)] if isinstance(data, list) else []
    card = next((c for c in cards if c.get("id") == model), cards[0] if len(cards) == 1 else None)
    length = None if card is None else card.get("max_model_len")
    return (
        length if isinstance(length, int) and not isinstance(length, bool) and length > 0 else None
    )


class ServedContexts:
    """Asks each backend once; ``limits`` holds what they said."""

    def __init__(
        self,
        pool: ConnectionPool,
        current_policy: Callable[[], CompiledPolicy],
        states: Callable[[], list[BackendState]],
        on_learned: Callable[[Mapping[str, int]], None],
    ) -> None:
        self._pool = pool
        self._policy = current_policy
        self._states = states
        self._on_learned = on_learned
        self._asked: set[Key] = set()
        self.limits: dict[str, int] = {}

    async def run(self) -> None:
        """Ask the backends not asked yet, forever; the first round is the caller's."""
        while True:
            await asyncio.sleep(self._policy().source.health.interval_s)
            await self.ask_new()

    async def ask_new(self) -> None:
        fresh = [
            s.spec
            for s in self._states()
            if s.health is Health.HEALTHY
            and s.spec.engine in _ASKED_OF
            and _key(s.spec) not in self._asked
        ]
        answers = await asyncio.gather(*(self._ask(spec) for spec in fresh))
        learned = {spec.name: n for spec, n in zip(fresh, answers, strict=True) if n is not None}
        names = {s.spec.name for s in self._states()}
        stale = set(self.limits) - names  # backends a reload removed
        if learned or stale:
            self.limits = {k: v for k, v in self.limits.items() if k in names} | learned
            for name, tokens in learned.items():
                log.info("backend %s serves a context of %d tokens", name, tokens)
            self._on_learned(dict(self.limits))

    async def _ask(self, spec: BackendSpec) -> int | None:
        settings, redactor = self._policy().source.health, self._policy().redactor
        try:
            body = await probe_get(self._pool, spec, "/v1/models", settings.timeout_s, redactor)
        except ProbeFailed as exc:
            log.debug("reading the served context of backend %s failed: %s", spec.name, exc)
            return None  # asked again next round
        self._asked.add(_key(spec))
        return served_context(body, spec.served_model)


def _key(spec: BackendSpec) -> Key:
    return (spec.name, spec.url, spec.served_model)
