"""Replica choice inside a pool: filters -> weighted scorers -> picker.

Algorithm: ``picker.eligible`` filters the pool's replicas; a prefix no candidate holds goes
to the level candidate with the least cached work (``placement``) when loads are level;
otherwise each scorer with a non-zero weight scores the candidates in [0, 1] (``scorers``)
and the candidate with the highest weighted sum wins, ties drawn with the pool's seeded
RNG. The winner is then remembered as holding the prompt's prefix blocks (``prefix_index``)
and as the session's replica (``x-gateway-session``, else the OpenAI ``user`` field), which
is what the prefix and session scorers read on the next request.

Parameters: the pool's ``scheduling`` settings (weights, imbalance_guard,
prefix_block_chars, prefix_blocks_per_backend, spread_new_prefixes, level_kv_usage,
work_half_life_s, max_sessions, session_ttl_s, seed) and an injected monotonic clock for
session expiry and the decay of cached work. State per pool survives a policy reload unless
the pool's scheduling settings change.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

from gateway.backends.state import BackendState
from gateway.openai.request import ParsedRequest
from gateway.policy.compile import CompiledPolicy
from gateway.rewrite import serialize
from gateway.scheduling import scorers
from gateway.scheduling.picker import NoBackend, Pick, best, eligible
from gateway.scheduling.placement import spread_new_prefix
from gateway.scheduling.prefix_index import PrefixIndex, block_hashes
from gateway.schema import Scheduling
from gateway.ttl_lru import TtlLru

_MAX_SESSION_KEY = 256


@dataclass(slots=True)
class RouteFacts:
    """What replica choice reads from one request, computed at most once per block size."""

    request: ParsedRequest
    session: str | None
    _blocks: dict[int, tuple[int, ...]] = field(default_factory=dict)
    _text: str | None = None

    @classmethod
    def of(cls, request: ParsedRequest, headers: Mapping[str, str]) -> RouteFacts:
        session = headers.get("x-gateway-session") or _user_field(request)
        return cls(request, session[:_MAX_SESSION_KEY] if session else None)

    def blocks(self, block_chars: int) -> tuple[int, ...]:
        found = self._blocks.get(block_chars)
        if found is None:
            if self._text is None:
                self._text = serialize(self.request.body).text
            found = self._blocks[block_chars] = block_hashes(self._text, block_chars)
        return found


@dataclass(slots=True)
class _PoolState:
    settings: Scheduling
    index: PrefixIndex
    sessions: TtlLru[str, str]
    rng: random.Random


@dataclass(frozen=True, slots=True)
class Choice:
    pick: Pick
    prefix_match: float = 0.0  # the winner's share of the prompt's blocks in the index

    @property
    def backend(self) -> BackendState:
        assert self.pick.backend is not None, "only a successful choice has a backend"
        return self.pick.backend


class Scheduler:
    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._pools: dict[str, _PoolState] = {}

    def reconcile(self, policy: CompiledPolicy) -> None:
        fresh: dict[str, _PoolState] = {}
        for name, pool in policy.pools.items():
            settings = pool.settings.scheduling
            old = self._pools.get(name)
            state = old if old is not None and old.settings == settings else self._new(settings)
            state.index.forget(spec.name for spec in pool.backends)
            fresh[name] = state
        self._pools = fresh

    def choose(
        self,
        pool: str,
        replicas: Sequence[BackendState],
        facts: RouteFacts,
        exclude: Collection[str] = (),
    ) -> Choice:
        candidates = eligible(replicas, exclude)
        if isinstance(candidates, NoBackend):
            return Choice(Pick(None, candidates))
        state = self._pools[pool]
        blocks = facts.blocks(state.settings.prefix_block_chars)
        matches = state.index.matches(blocks, (c.name for c in candidates))
        index = self._best(state, candidates, facts, matches) if len(candidates) > 1 else 0
        chosen = candidates[index]
        state.index.record(chosen.name, blocks, self._clock())
        if facts.session is not None:
            state.sessions.put(facts.session, chosen.name)
        return Choice(Pick(chosen), matches[chosen.name])

    def _best(
        self,
        state: _PoolState,
        candidates: Sequence[BackendState],
        facts: RouteFacts,
        matches: Mapping[str, float],
    ) -> int:
        weights = state.settings.weights
        loads = [c.host_inflight + c.load.waiting for c in candidates]
        if self._new_prefix(state, candidates, facts, matches):
            usages = [c.load.kv_usage for c in candidates]
            work = [state.index.work(c.name, self._clock()) for c in candidates]
            level = state.settings.level_kv_usage
            placed = spread_new_prefix(loads, usages, work, level, state.rng)
            if placed is not None:
                return placed
        totals = [0.0] * len(candidates)
        # Each scorer runs only with a weight, and prefix only when the prompt has blocks.
        if weights.queue:
            _add(totals, weights.queue, scorers.queue_scores(loads))
        if weights.kv_cache:
            usages = [c.load.kv_usage for c in candidates]
            _add(totals, weights.kv_cache, scorers.kv_scores(usages))
        if weights.latency:
            ewmas = [c.ttft_ewma for c in candidates]
            _add(totals, weights.latency, scorers.latency_scores(ewmas))
        if weights.prefix and any(matches.values()):
            prefix = [matches[c.name] for c in candidates]
            guard = state.settings.imbalance_guard
            _add(totals, weights.prefix, scorers.prefix_scores(prefix, loads, guard))
        if weights.session and facts.session is not None:
            sticky = state.sessions.get(facts.session)
            names = [c.name for c in candidates]
            _add(totals, weights.session, scorers.session_scores(names, sticky))
        return best(totals, state.rng)

    def _new_prefix(
        self,
        state: _PoolState,
        candidates: Sequence[BackendState],
        facts: RouteFacts,
        matches: Mapping[str, float],
    ) -> bool:
        """A prompt with prefix blocks that no candidate holds, and no session replica."""
        settings = state.settings
        if not settings.spread_new_prefixes or not settings.weights.prefix:
            return False
        if not matches or any(matches.values()):
            return False
        if not facts.blocks(settings.prefix_block_chars):
            return False
        sticky = state.sessions.get(facts.session) if facts.session is not None else None
        return sticky is None or all(c.name != sticky for c in candidates)

    def _new(self, settings: Scheduling) -> _PoolState:
        return _PoolState(
            settings,
            PrefixIndex(settings.prefix_blocks_per_backend, settings.work_half_life_s),
            TtlLru(settings.max_sessions, settings.session_ttl_s, self._clock),
            random.Random(settings.seed),
        )


def _add(totals: list[float], weight: float, scores: Sequence[float]) -> None:
    for i, score in enumerate(scores):
        totals[i] += weight * score


def _user_field(request: ParsedRequest) -> str | None:
    user = request.body.get("user")
    return user if isinstance(user, str) and user else None
