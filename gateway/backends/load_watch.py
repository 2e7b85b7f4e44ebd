"""Background reading of each backend's load (``scrape.py``) for routing and admission.

Every ``health.scrape_interval_s`` the metrics of every routable vLLM or TGI backend are
read concurrently, as requests reach the backend (``probe.py``); a backend whose metrics
cannot be read keeps its last load (it is still a backend: health decides whether it serves),
and why is logged when the reason appears or changes. The prefix-cache hit rate and
speculative-decoding acceptance are the counters' ratios between two successive reads.
A read that shows requests waiting while the KV cache has room (below ``KV_ROOM``) tells
that the engine runs at most the most sequences it was seen running: from then on the
gateway sends it no more than that at once (``BackendState.dispatch_cap``).
Separate from health probes because routing wants fresher load than liveness needs.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from gateway.backends.probe import ProbeFailed, ProblemLog, probe_get
from gateway.backends.scrape import Load, parse_load, scrapes, windowed_ratio
from gateway.backends.state import BackendState
from gateway.policy.compile import CompiledPolicy
from gateway.upstream import ConnectionPool

log = logging.getLogger(__name__)

KV_ROOM = 0.9  # below this KV cache usage, requests waiting in an engine wait for a batch slot


class LoadWatcher:
    def __init__(
        self,
        pool: ConnectionPool,
        current_policy: Callable[[], CompiledPolicy],
        states: Callable[[], list[BackendState]],
    ) -> None:
        self._pool = pool
        self._policy = current_policy
        self._states = states
        self.problems = ProblemLog(log, "metrics scrape")

    async def run(self) -> None:
        while True:
            await self.scrape_all()
            await asyncio.sleep(self._policy().source.health.scrape_interval_s)

    async def scrape_all(self) -> None:
        timeout_s = self._policy().source.health.timeout_s
        wanted = [s for s in self._states() if s.routable and scrapes(s.spec.engine)]
        await asyncio.gather(*(self._scrape(s, timeout_s) for s in wanted))

    async def _scrape(self, state: BackendState, timeout_s: float) -> None:
        try:
            redactor = self._policy().redactor
            body = await probe_get(self._pool, state.spec, "/metrics", timeout_s, redactor)
            fold_load(state, parse_load(state.spec.engine, body.decode("utf-8", "replace")))
        except ProbeFailed as exc:
            self.problems.note(state.name, exc)
            return
        except ValueError as exc:
            self.problems.note(
                state.name,
                ProbeFailed(
                    "/metrics is not Prometheus text", f": {redactor.clipped(str(exc), 200)}"
                ),
            )
            return
        self.problems.note(state.name, None)


def fold_load(state: BackendState, load: Load) -> None:
    """Store a fresh read, and the rates since the previous one."""
    old = state.load
    hit = windowed_ratio(load.prefix_hits, load.prefix_queries, old.prefix_hits, old.prefix_queries)
    accepted = windowed_ratio(
        load.spec_accepted, load.spec_drafted, old.spec_accepted, old.spec_drafted
    )
    # No new prompt tokens in the interval: the last rate still says the most.
    state.prefix_hit_rate = hit if hit is not None else state.prefix_hit_rate
    state.spec_acceptance = accepted if accepted is not None else state.spec_acceptance
    state.load = load
    state.slots_seen = max(state.slots_seen, load.running)
    # Waiting with KV room to spare: the engine's batch size, not its memory, holds them back.
    if load.waiting > 0 and load.running > 0 and load.kv_usage < KV_ROOM:
        state.batch_full_seen = True
