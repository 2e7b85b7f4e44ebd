"""Background reading of each backend's load (``scrape.py``) for routing and admission.

Every ``health.scrape_interval_s`` the metrics of every routable vLLM or TGI backend are
read concurrently, as requests reach the backend (``probe.py``); a backend whose metrics
cannot be read keeps its last load (it is still a backend: health decides whether it serves),
and why is logged when the reason appears or changes. The prefix-cache hit rate and
speculative-decoding acceptance are the counters' ratios between two successive reads.
A read that shows requests waiting while the KV cache has room (below ``KV_ROOM``) and the
engine running the most it was ever seen running tells its batch size: from then on the
gateway sends it no more than that at once (``BackendState.dispatch_cap``; a quarter more
until a second such read, at least ``CONFIRM_GAP_S`` later, confirms the size:
``learn_batch``). A read confirms only while the gateway filled its cap there: with less
sent, what waits in the engine is what arrived since its last step, not a limit. A known
size whose reads, the cap filled, show nothing waiting for ``RELEARN_S`` is probed again.
Until then, a backend sent more than it was ever seen running
(``BackendState.overflowing``) is read again every ``OVERFLOW_TICK_S``, so the first burst
learns the batch within a tick, and one with room shows it as fast. One that other gateways
use too (``BackendState.with_others``) is read every ``SHARED_TICK_S``: what they send there
shows only in its reads. A read is believed for
``FRESH_READS`` scrape intervals (``BackendState.report_fresh``).
Separate from health probes because routing wants fresher load than liveness needs.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable

from gateway.backends.probe import ProbeFailed, ProblemLog, probe_get
from gateway.backends.scrape import Load, parse_load, scrapes, windowed_ratio
from gateway.backends.state import KV_ROOM, BackendState
from gateway.policy.compile import CompiledPolicy
from gateway.upstream import ConnectionPool

log = logging.getLogger(__name__)

OVERFLOW_TICK_S = 0.05  # how soon an engine sent more than it was seen running is read
SHARED_TICK_S = 0.2  # how often an engine other gateways use too is read
CONFIRM_GAP_S = 1.0  # the least time between two reads that confirm a batch size
FRESH_READS = 2  # a read is believed for this many scrape intervals


class LoadWatcher:
    def __init__(
        self,
        pool: ConnectionPool,
        current_policy: Callable[[], CompiledPolicy],
        states: Callable[[], list[BackendState]],
        on_read: Callable[[BackendState], None] = lambda state: None,
    ) -> None:
        self._pool = pool
        self._policy = current_policy
        self._states = states
        self._on_read = on_read  # a read may free slots: waiters go
        self.problems = ProblemLog(log, "metrics scrape")

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        next_all = next_shared = loop.time()
        while True:
            if loop.time() >= next_all:
                await self.scrape_all()
                next_all = loop.time() + self._policy().source.health.scrape_interval_s
            else:
                shared = loop.time() >= next_shared
                await self.scrape_overflowing(shared)
                if shared:
                    next_shared = loop.time() + SHARED_TICK_S
            await asyncio.sleep(max(0.0, min(OVERFLOW_TICK_S, next_all - loop.time())))

    async def scrape_overflowing(self, shared: bool = False) -> None:
        """Read at once the backends sent more than they were seen running: a burst that
        fills an engine's batch is capped within a tick, not a scrape interval later; and,
        with ``shared``, those other gateways use too."""
        timeout_s = self._policy().source.health.timeout_s
        wanted = [s for s in self._states() if s.routable and scrapes(s.spec.engine)]
        due = [s for s in wanted if s.overflowing or (shared and s.with_others)]
        await asyncio.gather(*(self._scrape(s, timeout_s) for s in due))

    async def scrape_all(self) -> None:
        timeout_s = self._policy().source.health.timeout_s
        wanted = [s for s in self._states() if s.routable and scrapes(s.spec.engine)]
        await asyncio.gather(*(self._scrape(s, timeout_s) for s in wanted))

    async def _scrape(self, state: BackendState, timeout_s: float) -> None:
        try:
            redactor = self._policy().redactor
            before = state.host_inflight  # the engine's moment is somewhere in the read
            body = await probe_get(self._pool, state.spec, "/metrics", timeout_s, redactor)
            cap = state.dispatch_cap
            load = parse_load(state.spec.engine, body.decode("utf-8", "replace"))
            interval = self._policy().source.health.scrape_interval_s
            fold_load(state, load, state.clock(), FRESH_READS * interval, before)
            self._on_read(state)
            if state.dispatch_cap != cap:
                log.info(
                    "backend %s: sends at most %d at once (was %d; it ran %d, %d waiting)",
                    state.name, state.dispatch_cap, cap, state.load.running, state.load.waiting,
                )  # fmt: skip
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


def fold_load(
    state: BackendState, load: Load, now: float, fresh_s: float = 2.0, own_before: float = 0.0
) -> None:
    """Store a fresh read (believed for ``fresh_s``), and the rates since the previous one;
    ``own_before``: what this host had in flight there when the read was asked for."""
    old = state.load
    hit = windowed_ratio(load.prefix_hits, load.prefix_queries, old.prefix_hits, old.prefix_queries)
    accepted = windowed_ratio(
        load.spec_accepted, load.spec_drafted, old.spec_accepted, old.spec_drafted
    )
    # No new prompt tokens in the interval: the last rate still says the most.
    state.prefix_hit_rate = hit if hit is not None else state.prefix_hit_rate
    state.spec_acceptance = accepted if accepted is not None else state.spec_acceptance
    # Offered its cap's worth (ours in flight, or all it holds) under the cap before this read.
    offered = max(state.host_inflight, own_before, load.running + load.waiting)
    filled = offered >= state.dispatch_cap
    state.load = load
    # Its own in the read: what it had in flight there while the read was on its way (a
    # request that ended meanwhile may be in it), and what its workers dropped just before
    # (a hedge's loser, a request taken back) that the engine may not have let go of yet.
    # Else those read as another gateway's, and the batch is halved for SHARE_MEMORY_S.
    own = max(state.host_inflight, own_before) + state.host_dropped(now)
    state.read_at, state.fresh_s, state.own_at_read = now, fresh_s, own
    if state.others > 0:
        state.others_at = now
    learn_batch(state, load, now, filled)


def learn_batch(state: BackendState, load: Load, now: float, filled: bool) -> None:
    """Count a read taken at ``now`` toward the engine's batch size
    (``BackendState.dispatch_cap``); ``filled``: the gateway had its cap's worth there."""
    if load.running > state.slots_seen:
        # It ran more than an earlier read's full batch: that read caught a moment (a burst's
        # prefills queued behind one step's token budget), not its size. With nothing
        # waiting now it has shown room: probed again from what it ran, as before that read
        # (one more a read, as it was, took a 256-slot engine seen "full" at 81 to 85 in
        # two seconds while 200 users waited in the gateway). Still waiting: one beyond.
        state.slots_seen, state.batch_full_reads = load.running, 0
        state.batch_read_at, state.room_since = -math.inf, math.inf
        if load.waiting == 0:
            state.batch_limited = False
    # Waiting with KV room to spare while it ran its most: its batch size, not its memory,
    # holds them back.
    full = load.waiting > 0 and load.running >= max(1.0, state.slots_seen)
    if not full or load.kv_usage >= KV_ROOM:
        if state.batch_known and filled and load.waiting == 0 and load.kv_usage < KV_ROOM:
            # Kept full with none waiting: from ``RELEARN_S`` on, it is probed again.
            state.room_since = min(state.room_since, now)
        return
    state.batch_limited, state.room_since = True, math.inf
    state.batch_tokens = state.asked.usual  # full with prompts of this size
    # A long prompt's prefill can hold the others back for a few reads in a row: only reads
    # far enough apart count as two sightings. A busy engine's reads show requests that
    # arrived since its last step as waiting: only a read taken while the gateway held work
    # back from it (its cap filled) shows that it would not run more.
    if filled and now - state.batch_read_at >= CONFIRM_GAP_S:
        state.batch_full_reads += 1
        state.batch_read_at = now
