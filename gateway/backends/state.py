"""Live state of each backend replica, kept across policy reloads.

A backend keeps its state (in-flight count, health, circuit breaker) through a reload as long
as its name and URL are unchanged; anything else is a new backend and starts fresh: a listed
one as routable before its first probe, a discovered one (``discover``) as unhealthy until a
probe passes. A backend the new policy no longer has is dropped here; requests in flight on
it keep its state through their lease and finish. A changed breaker setting gives a fresh one.

How much a replica takes at once comes from evidence, never from a guess that refuses:

- a cap the policy sets (``max_inflight``) is a hard cap;
- an engine whose metrics were read is probed: sent more than it was seen to take
  (``taken``: its largest running count in a read, or the most in flight whose first tokens
  came in line with the prediction, ``room_seen``), the rest waiting in the gateway for a
  moment while the next read (every ``OVERFLOW_TICK_S`` while it is probed) or first token
  raises the bound: a lower bound that rises at once on evidence, never a limit that
  refuses (``probing``). How much more: ``PROBE_FACTOR`` times ``taken``, at least
  ``PROBE_MIN``, so that a burst onto a small batch shows it full within a read (its waits
  then become evidence, and the waiters that cannot be served in time are refused); and,
  while its fresh report shows room (``shows_room``: nothing waiting, the KV cache below
  ``KV_ROOM``, no first token late since) and the mean time its requests held a slot
  (``hold_s``) is known, as many as would drain within ``PROBE_WAIT_S`` behind ``taken``
  were that all its room, ``taken * (1 + PROBE_WAIT_S / hold)``, if more: a fast engine
  seen running 4 (20 ms a request) takes a step to 64 or 200 users at once;
- a read showing requests waiting while the KV cache had room and it ran its most tells
  its batch size (``batch_limited``): from then on it is sent that many at once (a quarter
  more, ``SIGHTING_PROBE``, until a second read confirms it), until a read shows it running
  more with nothing waiting (that sighting was a moment: it is probed again). It is a limit
  shown (``limit_shown``: a queue behind it is evidence, and waits for its slots may refuse)
  once a second such read, far enough apart and with the cap filled, confirms it
  (``batch_known``), or once it is shared with others (a 256-slot engine stepped from 64
  to 200 users was once seen at 104 running, 5 waiting, and waits behind 104 slots refused
  users whom the next read let in). One kept full ``RELEARN_S`` with none waiting is probed
  again (a quarter more); one read full with prompts over five times as long as those asked
  now (``asked.py``, ``SHORTER``) shows no limit: long prefills do not cap short prompts;
- an engine without metrics is sent up to the policy's cap; its room shows in its TTFT.

Its reported queue is believed while the report is fresh (``fresh_s``, two scrape
intervals): no queueing inside it is predicted while it reports none, and while it shows
room a prediction for a request it can take now refuses nothing (``ttft_prediction``): what
keeps such a request from its first token is its own prefill or the gateway's own delay,
which refusing others cannot shorten.

Other gateways (replicas of this one, other clients) show in the same report: what it runs
and queues beyond what this gateway had sent at the read (``others``). A known batch is
then shared: while others were seen using it within ``SHARE_MEMORY_S``, this gateway keeps
to half of it (two gateways each keeping to half fill it and queue nothing; taking what a
read said the others left let two stale reads overfill it), and to less when its fresh
report shows the others holding more than their half (sent there before the batch was
known), and the engine's queue counts theirs too.

The workers of one host (``serve --workers N``) are one gateway: each publishes its own
counts on the host board (``host``, a ``HostShare``) and every decision here reads the
host's (``host_inflight``, ...), so caps, TTFT features and the engine's queue are the
host's at once; ``others`` is then what other hosts run there.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

from gateway.backends.asked import AskedSizes
from gateway.backends.breaker import BreakerSettings, BreakerState, CircuitBreaker
from gateway.backends.dropped import ABORT_SHOWS_S, Dropped
from gateway.backends.scrape import Load, scrapes
from gateway.backends.seams import HostShare, Movable
from gateway.backends.token_count import TokenCount
from gateway.backends.ttft import TtftFeatures, TtftModel
from gateway.policy.compile import BackendSpec

BATCH_CONFIRM_READS = 2  # reads of a full batch at one size before that size is known
PROBE_MIN = 8  # in flight on a replica whose metrics showed no limit yet, at least
# Beyond a batch size seen in one read, not yet confirmed, this share more (at least one): a
# busy engine's reads show requests that arrived since its last step as waiting, and a cap of
# one beyond kept such an engine at a moment's sighting (development notes, the ramp).
SIGHTING_PROBE = 0.25
PROBE_FACTOR = 2.0  # ... and up to this many times the most it was seen taking
PROBE_WAIT_S = 1.0  # while it shows room: the most a probe's excess may wait inside it
KV_ROOM = 0.9  # below this KV cache usage, requests waiting in an engine wait for a batch slot
HOLD_ALPHA = 0.1  # weight of one request in the mean time a request holds a slot there
SHARE_MEMORY_S = 10.0  # others seen in its batch this recently: keep to half of it
# A known batch kept full this long with nothing waiting is probed again (a quarter more),
RELEARN_S = 10.0
SHORTER = 0.2  # ... and holds no more for prompts under this share of those it was full with
LATE = (2.0, 0.1)  # a first token is late past 2x its calibrated prediction + 0.1 s


class Health(StrEnum):
    UNKNOWN = "unknown"
    HEALTHY = "healthy"
    UNHEALTHY = "unhealthy"


@dataclass(eq=False)
class BackendState:
    spec: BackendSpec
    inflight: int = 0
    health: Health = Health.UNKNOWN
    failures: int = 0
    successes: int = 0
    breaker: CircuitBreaker = field(
        default_factory=lambda: CircuitBreaker(BreakerSettings(), time.monotonic)
    )
    load: Load = field(default_factory=Load)  # last scraped from the backend's /metrics
    ttft_ewma: float | None = None  # seconds, from dispatch to first token
    prefix_hit_rate: float | None = None  # over the last scrape interval
    spec_acceptance: float | None = None  # over the last scrape interval
    # Sent here and not yet at their first token (prefill ahead of a new request).
    pending: int = 0
    slots_seen: float = 0.0  # the most sequences the engine reported running at once
    # A read showed requests waiting while the KV cache had room and the engine ran
    # ``slots_seen``: it runs no more than that at once, so more sent there only queue where
    # nobody can watch them. One read may catch a long prompt's prefill chunk holding the
    # others back with slots free, so the size counts as known after two such reads of it
    # (``load_watch.learn_batch``: far enough apart, each with the cap filled); until then a
    # few more may go (``SIGHTING_PROBE``).
    batch_limited: bool = False
    batch_full_reads: int = 0  # such reads of the size ``slots_seen``
    batch_read_at: float = -math.inf  # when the last of them was taken
    room_since: float = math.inf  # when reads began showing it known, filled, none waiting
    batch_tokens: float = 0.0  # the usual prompts asked at the last read showing it full
    asked: AskedSizes = field(default_factory=AskedSizes)  # its pool's (the registry's)
    pending_tokens: float = 0.0
    # The most in flight at a dispatch whose first token came in line with the prediction
    # (no queue inside the engine): room it has shown, where its metrics say nothing.
    room_seen: float = 0.0
    read_at: float = -math.inf  # when its metrics were last read (the registry's clock)
    own_at_read: float = 0.0  # what this gateway had in flight there at that read
    fresh_s: float = 0.0  # how long such a read is believed
    late_at: float = -math.inf  # when a first token last came later than predicted
    others_at: float = -math.inf  # when a read last showed others' requests in it
    hold_s: float | None = None  # the mean time a request held a slot here (EWMA), seconds
    clock: Callable[[], float] = time.monotonic
    # The requests sent here still waiting for their first token that can be taken back,
    # oldest first (``recovery/take_back.py`` picks the last sent).
    movable: list[Movable] = field(default_factory=list)
    ttft_model: TtftModel = field(default_factory=TtftModel)
    # Prompt tokens it counts per character sent, learned from its ``usage`` (token_count.py).
    token_count: TokenCount = field(default_factory=TokenCount)
    host: HostShare | None = None  # the host's other workers, with ``serve --workers``
    aborts: Dropped = field(default_factory=Dropped)  # ``done(aborted=True)`` lately

    def sent(self, uncached_tokens: float) -> None:
        """A request was sent here; it waits for its first token."""
        self.pending += 1
        self.pending_tokens += uncached_tokens
        self.inflight += 1
        self._publish()

    def prefilled(self, uncached_tokens: float) -> None:
        """A request sent here has its first token (or ended without one)."""
        self.pending -= 1
        self.pending_tokens = max(0.0, self.pending_tokens - uncached_tokens)
        self._publish()

    def done(self, held_s: float | None = None, aborted: bool = False) -> None:
        """A request sent here ended, after holding its slot ``held_s`` (None: unknown);
        ``aborted``: this gateway dropped it (the engine may show it a moment longer)."""
        self.inflight -= 1
        if aborted:
            now = self.clock()
            self.aborts.add(now)
            if self.host is not None:  # a sibling's read may show it too
                self.host.publish_dropped(self.aborts.lately(now), now + ABORT_SHOWS_S)
        if held_s is not None and math.isfinite(held_s) and held_s >= 0.0:
            old = self.hold_s
            self.hold_s = held_s if old is None else old + HOLD_ALPHA * (held_s - old)
        self._publish()

    def _publish(self) -> None:
        if self.host is not None:
            self.host.publish(self.inflight, self.pending, self.pending_tokens)

    @property
    def host_inflight(self) -> float:
        """In flight here from this host: this worker's and its siblings'."""
        host = self.host
        return float(self.inflight) if host is None else self.inflight + host.inflight()

    def ttft_features(self, uncached_tokens: float) -> TtftFeatures:
        """What stands between a request sent now and its first token (``backends/ttft.py``)."""
        host = self.host
        pending, pending_tokens = float(self.pending), self.pending_tokens
        if host is not None:
            pending += host.pending()
            pending_tokens += host.pending_tokens()
        return TtftFeatures(
            uncached_tokens=uncached_tokens,
            pending_tokens=pending_tokens,
            pending=pending,
            decoding=max(0.0, self.host_inflight - pending),
            engine_waiting=self._queued_in_engine(),
        )

    def _queued_in_engine(self) -> float:
        """Requests waiting inside the engine: ours and the others' beyond its known batch,
        or what its fresh report says; none is predicted on a guess."""
        if self.batch_limited and self.slots_seen > 0:
            return max(0.0, self.host_inflight + self.others - self.slots_seen)
        return self._scraped_queue()

    def host_dropped(self, now: float) -> float:
        """Requests this host's workers dropped there that the engine may still show."""
        return self.aborts.lately(now) + (0 if self.host is None else self.host.dropped(now))

    @property
    def others(self) -> float:
        """Requests of others in the engine by its fresh report: all it runs and queues
        beyond what this gateway (this host's workers) had sent at the read."""
        if not self.report_fresh:
            return 0.0
        return max(0.0, self.load.running + self.load.waiting - self.own_at_read)

    def _scraped_queue(self) -> float:
        """Other clients' requests queued in the engine, as far as its fresh metrics tell.
        Once capped at its batch, a scraped queue is our own from before the cap (stale by
        up to a scrape interval): only what is in flight beyond the batch counts then."""
        if self.batch_limited or not self.report_fresh:
            return 0.0
        return self.load.waiting

    @property
    def metrics_read(self) -> bool:
        return self.read_at > -math.inf

    @property
    def report_fresh(self) -> bool:
        """Its last metrics read is recent enough to be believed."""
        return self.clock() - self.read_at <= self.fresh_s

    @property
    def reports_waiting(self) -> bool:
        """Its own fresh report says requests wait inside it."""
        return self.report_fresh and self.load.waiting > 0

    def first_token_in_line(self, inflight_at_dispatch: float) -> None:
        """A first token came as predicted for a dispatch made with this many in flight:
        the engine had room for them all."""
        self.room_seen = max(self.room_seen, inflight_at_dispatch)

    def first_token_late(self, observed_s: float, upper_s: float) -> None:
        """A first token came past its (supported, calibrated) prediction; well past it
        (``LATE``: the calibrated one is exceeded one time in ten by design), the engine's
        report of room is not believed until a fresh window passes without such a one."""
        if observed_s > LATE[0] * upper_s + LATE[1]:
            self.late_at = self.clock()

    @property
    def shows_room(self) -> bool:
        """Its fresh report shows room: nothing waiting, the KV cache below ``KV_ROOM``,
        and no first token late since the freshness window began."""
        if not self.report_fresh or self.load.waiting > 0 or self.load.kv_usage >= KV_ROOM:
            return False
        return self.clock() - self.late_at > self.fresh_s

    def next_slot_features(self, uncached_tokens: float) -> TtftFeatures:
        """What a request meets when sent as the next slot frees (it waits in the gateway
        until then): every other slot decoding, nothing else in prefill or queued."""
        busy = max(0.0, min(self.host_inflight, self.dispatch_cap) - 1)
        return TtftFeatures(uncached_tokens, 0.0, 0.0, busy, self._scraped_queue())

    def predict_ttft(self, uncached_tokens: float, *, at_next_slot: bool = False) -> float:
        """Calibrated (``TtftModel.upper``): what admission decides on; ``at_next_slot``:
        for a request that waits for a slot here first."""
        return self.ttft_model.upper(self._features(uncached_tokens, at_next_slot))

    def ttft_prediction(
        self, uncached_tokens: float, *, at_next_slot: bool = False
    ) -> tuple[float, bool]:
        """``predict_ttft``, and whether it rests on observations (not a prior, not
        extrapolated in its features or its outcome) and may refuse: never for a request
        sent now to an engine that shows room. One call, the features read once."""
        features = self._features(uncached_tokens, at_next_slot)
        model = self.ttft_model
        upper = model.upper(features)
        supported = (at_next_slot or not self.shows_room) and model.supported(features)
        return upper, supported and model.reaches(upper)

    def _features(self, uncached_tokens: float, at_next_slot: bool) -> TtftFeatures:
        if at_next_slot:
            return self.next_slot_features(uncached_tokens)
        return self.ttft_features(uncached_tokens)

    def observe_ttft(self, seconds: float, alpha: float) -> None:
        """Fold one TTFT into the exponentially weighted moving average."""
        previous = self.ttft_ewma
        self.ttft_ewma = seconds if previous is None else previous + alpha * (seconds - previous)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def routable(self) -> bool:
        # Unknown counts as routable so the first requests need not wait for the first probe.
        return self.health is not Health.UNHEALTHY and self.breaker.allows()

    @property
    def ready(self) -> bool:
        return self.health is Health.HEALTHY and self.breaker.state is not BreakerState.OPEN

    @property
    def dispatch_cap(self) -> int:
        """The most requests the gateway sends here at once (see the module's docstring):
        the policy's cap, the engine's known batch, or, while probing, a multiple of what it
        was seen taking; the excess waits in the gateway's queue (where admission predicts,
        re-checks and refuses it in time) instead of the engine's."""
        hard = self.spec.hard_cap
        if not scrapes(self.spec.engine) or not self.metrics_read:
            return hard
        if self.batch_limited and self.slots_seen >= 1:
            # Unconfirmed (or read full, none waiting, for RELEARN_S), more may go: a cap of
            # exactly what ran would keep a moment's sighting from ever running more.
            seen = int(self.slots_seen)
            known = self.batch_holds and self.read_at - self.room_since < RELEARN_S
            probe = 0 if known else max(1, math.ceil(SIGHTING_PROBE * seen))
            batch = seen + probe
            if self.shared:
                # Half, and never more than the others left it by its fresh report: one
                # that took more than half (sent before the batch was known) fills it.
                left = int(self.slots_seen - self.others)
                batch = max(1, min(int(self.slots_seen) // 2, left))
            return min(hard, batch)
        taken = max(self.slots_seen, self.room_seen)
        probe, hold = max(PROBE_MIN, int(PROBE_FACTOR * taken)), self.hold_s
        if self.shows_room and hold is not None:
            # As many more as would drain within PROBE_WAIT_S were ``taken`` all it has.
            drains = taken * (1.0 + PROBE_WAIT_S / max(hold, 1e-3))
            probe = max(probe, int(min(drains, float(hard))))
        return min(hard, probe)

    @property
    def probing(self) -> bool:
        """Capped by what it was seen taking, not by a limit it showed: a cap that queues
        for a moment and is no evidence that the pool is full."""
        cap = self.dispatch_cap
        return cap < self.spec.hard_cap and not self.batch_limited

    @property
    def limit_shown(self) -> bool:
        """Its cap is a limit it showed: the policy's, or a batch size confirmed by a second
        read. A single read's sighting may be a moment (a burst's prefills behind one step's
        token budget) that the next read lifts: a wait behind it is a guess, not evidence.
        A batch shared with others counts once seen: each keeps to half of it, so no read
        shows it full again (two gateways' waiters waited to their deadlines for one)."""
        if self.dispatch_cap >= self.spec.hard_cap:
            return True
        return self.batch_limited and (self.batch_holds or self.shared)

    @property
    def slots_shown(self) -> int:
        """What it has shown it runs at once: its cap when that is a limit, else ``taken``
        (a probe's extra is room hoped for, not shown)."""
        cap = self.dispatch_cap  # once: ``probing`` would work it out again
        if cap >= self.spec.hard_cap or self.batch_limited:  # not probing
            return cap
        return min(cap, max(1, int(max(self.slots_seen, self.room_seen))))

    @property
    def batch_known(self) -> bool:
        return self.batch_full_reads >= BATCH_CONFIRM_READS

    @property
    def batch_holds(self) -> bool:
        """Its batch is confirmed, for prompts like those asked now (``SHORTER``)."""
        return self.batch_known and self.asked.recent >= SHORTER * self.batch_tokens

    @property
    def overflowing(self) -> bool:
        """More in it (ours and others': two gateways each under its most can fill it
        together) than it was ever seen running, its batch size not yet confirmed: the next
        read of its metrics may show that batch full, or running more (``load_watch.py``
        reads it at once)."""
        # Only an engine whose metrics were read can tell.
        total = self.host_inflight + self.others
        return self.metrics_read and not self.batch_holds and self.slots_seen < total

    @property
    def with_others(self) -> bool:
        """Others were seen in it within ``SHARE_MEMORY_S``: read it often, their use
        changes what it has left (and, before its batch is known, whether ours overflow it)."""
        return self.clock() - self.others_at <= SHARE_MEMORY_S

    @property
    def shared(self) -> bool:
        """Its known batch is shared with others: this gateway keeps to half of it."""
        return self.batch_limited and self.with_others

    @property
    def has_capacity(self) -> bool:
        return self.host_inflight < self.dispatch_cap
