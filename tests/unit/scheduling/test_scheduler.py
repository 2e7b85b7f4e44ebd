"""Replica choice end to end on backend states: prefix affinity, its guard, sessions, load."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from gateway.backends.scrape import Load
from gateway.backends.state import BackendState, Health
from gateway.openai.request import ParsedRequest
from gateway.policy.compile import CompiledPolicy
from gateway.scheduling.picker import NoBackend
from gateway.scheduling.scheduler import RouteFacts, Scheduler
from tests.unit.gateway.helpers import policy, spec


def _policy(scheduling: str = "") -> CompiledPolicy:
    backends = "".join(
        f"""
          - name: {n}
            url: http://127.0.0.1:90{i}0
            model: org/m
            pool: small
            max_inflight: 64"""
        for i, n in enumerate("abc")
    )
    # Ties are drawn with a seeded RNG here (by default each process draws its own seed).
    seeded = scheduling if "seed" in scheduling else "{seed: 0, " + (scheduling[1:] or "}")
    extra = f"\n        pools:\n          small:\n            scheduling: {seeded}"
    return policy(
        f"""
        backends:{backends}
        models:
          m:
            pool: small{extra}
        """
    )


class World:
    def __init__(self, scheduling: str = "") -> None:
        self.policy = _policy(scheduling)
        self.now = 0.0
        self.scheduler = Scheduler(lambda: self.now)
        self.scheduler.reconcile(self.policy)
        self.states = {
            s.name: BackendState(spec(s.name, max_inflight=64), health=Health.HEALTHY)
            for s in self.policy.backends
        }

    def choose(self, body: dict[str, Any], headers: dict[str, str] | None = None) -> str:
        facts = RouteFacts.of(ParsedRequest("chat", "m", False, body), headers or {})
        choice = self.scheduler.choose("small", list(self.states.values()), facts)
        return choice.backend.name

    def send(self, body: dict[str, Any], headers: dict[str, str] | None = None) -> str:
        """Choose and keep the request in flight there."""
        name = self.choose(body, headers)
        self.states[name].inflight += 1
        return name


def chat(tenant: int, question: str = "What is my balance?", **extra: Any) -> dict[str, Any]:
    system = f"You are the assistant of tenant {tenant}. " + "Policy text. " * 200
    return {
        "model": "m",
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": question}],
        **extra,
    }


def test_a_tenant_sticks_to_the_replica_that_holds_its_prefix() -> None:
    world = World()
    first = world.choose(chat(1))
    assert all(world.choose(chat(1, f"question {i}")) == first for i in range(20))


def test_tenants_spread_by_load_when_nobody_holds_their_prefix() -> None:
    world = World()
    homes = [world.send(chat(t)) for t in range(3)]
    assert sorted(homes) == ["a", "b", "c"]  # each new prefix went to the least loaded


def test_a_hot_replica_loses_its_tenants_beyond_the_guard() -> None:
    world = World("{imbalance_guard: 4}")
    home = world.choose(chat(1))
    world.states[home].inflight = 4
    assert world.choose(chat(1)) == home  # 4 busier than the others: still within the guard
    world.states[home].inflight = 5
    assert world.choose(chat(1)) != home


def test_session_affinity_without_a_shared_prefix() -> None:
    world = World("{weights: {prefix: 0, queue: 1, kv_cache: 0, latency: 0, session: 2}}")
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "user": "u-42"}
    home = world.send(body)
    world.states[home].inflight += 1  # busier than the rest, but the session outweighs load
    assert all(world.choose(body) == home for _ in range(10))
    header_home = world.choose({**body, "user": "other"}, {"x-gateway-session": "s-1"})
    assert world.choose({**body, "user": "else"}, {"x-gateway-session": "s-1"}) == header_home


def test_sessions_expire() -> None:
    world = World(
        "{weights: {prefix: 0, queue: 0, kv_cache: 0, latency: 0, session: 1}, session_ttl_s: 10}"
    )
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "user": "u"}
    home = world.choose(body)
    world.now = 11.0
    seen = Counter(world.choose({**body, "user": f"fresh-{i}"}) for i in range(60))
    assert len(seen) == 3  # no affinity: ties drawn over every replica
    world.now = 30.0
    assert home in seen


def test_queue_only_takes_the_least_loaded() -> None:
    world = World("{weights: {prefix: 0, queue: 1, kv_cache: 0, latency: 0, session: 0}}")
    world.states["a"].inflight = 3
    world.states["b"].inflight = 1
    world.states["c"].load = Load(waiting=5.0)
    assert world.choose(chat(1)) == "b"


def test_latency_avoids_a_slow_replica() -> None:
    world = World("{weights: {prefix: 0, queue: 0, kv_cache: 0, latency: 1, session: 0}}")
    for name, ttft in (("a", 0.9), ("b", 0.1), ("c", 0.5)):
        world.states[name].observe_ttft(ttft, alpha=0.2)
    assert world.choose(chat(1)) == "b"


def test_exclude_and_no_backend_reasons() -> None:
    world = World()
    facts = RouteFacts.of(ParsedRequest("chat", "m", False, chat(1)), {})
    replicas = list(world.states.values())
    choice = world.scheduler.choose("small", replicas, facts, exclude={"a", "b"})
    assert choice.backend.name == "c"
    assert world.scheduler.choose(
        "small", replicas, facts, exclude={"a", "b", "c"}
    ).pick.reason is (NoBackend.NONE_HEALTHY)
    for state in replicas:
        state.inflight = 64
    assert world.scheduler.choose("small", replicas, facts).pick.reason is NoBackend.ALL_SATURATED


def test_same_seed_same_choices() -> None:
    def run() -> list[str]:
        world = World("{seed: 5}")
        return [world.choose(chat(t)) for t in range(12)]

    assert run() == run()


def test_reload_keeps_memory_unless_scheduling_changes() -> None:
    world = World()
    home = world.choose(chat(1))
    world.scheduler.reconcile(_policy())  # same settings
    world.states[home].inflight = 2
    assert world.choose(chat(1)) == home
    world.scheduler.reconcile(_policy("{seed: 9}"))  # new settings, fresh index
    world.states[home].inflight = 2
    assert world.choose(chat(1)) != home


def test_prefix_match_is_reported() -> None:
    world = World()
    facts = RouteFacts.of(ParsedRequest("chat", "m", False, chat(1)), {})
    replicas = list(world.states.values())
    assert world.scheduler.choose("small", replicas, facts).prefix_match == 0.0
    again = RouteFacts.of(ParsedRequest("chat", "m", False, chat(1, "other question")), {})
    assert world.scheduler.choose("small", replicas, again).prefix_match == pytest.approx(
        1.0, abs=0.05
    )


def _closed_loop(world: World, tenants: int, rounds: int) -> tuple[Counter[str], dict[int, str]]:
    """Tenants take turns, one request at a time; a cached prefix answers fast (0.1 s),
    a full prefill slowly (0.8 s), which is what the replicas' latency averages learn."""
    served: Counter[str] = Counter()
    homes: dict[int, str] = {}
    for _ in range(rounds):
        for tenant in range(tenants):
            facts = RouteFacts.of(ParsedRequest("chat", "m", False, chat(tenant)), {})
            choice = world.scheduler.choose("small", list(world.states.values()), facts)
            name = choice.backend.name
            world.states[name].observe_ttft(0.1 if choice.prefix_match else 0.8, alpha=0.2)
            served[name] += 1
            homes.setdefault(tenant, name)
            world.now += 1.0
    return served, homes


@pytest.mark.parametrize(
    ("scheduling", "busiest_at_most", "busiest_at_least"),
    [
        ("", 2 / 6, 2 / 6),  # 6 tenants on 3 replicas: two each
        ("{spread_new_prefixes: false}", 1.0, 3 / 6),  # the latency average piles them up
    ],
)
def test_new_prefixes_spread_over_level_replicas(
    scheduling: str, busiest_at_most: float, busiest_at_least: float
) -> None:
    world = World(scheduling)
    served, homes = _closed_loop(world, tenants=6, rounds=5)
    busiest = max(served.values()) / sum(served.values())
    assert busiest_at_least <= busiest <= busiest_at_most
    # Affinity holds either way: every tenant stays where its prefix went.
    assert all(served[home] >= 5 for home in homes.values())


@pytest.mark.parametrize(("half_life", "back_to_a"), [(10.0, True), (86_400.0, False)])
def test_cached_work_decays_so_old_placements_stop_counting(
    half_life: float, back_to_a: bool
) -> None:
    world = World(f"{{work_half_life_s: {half_life}}}")
    world.states["b"].inflight = world.states["c"].inflight = 1
    assert {world.choose(chat(t)) for t in range(4)} == {"a"}  # four prefixes on a at t=0
    world.now = 990.0
    world.states["a"].inflight, world.states["c"].inflight = 1, 0
    assert world.choose(chat(10)) == "c"
    world.states["b"].inflight, world.states["c"].inflight = 0, 1
    assert world.choose(chat(11)) == "b"
    world.now = 1000.0
    world.states["a"].inflight = world.states["c"].inflight = 0
    # Four placements 100 half-lives old weigh less than one from 10 s ago; undecayed, more.
    assert (world.choose(chat(12)) == "a") is back_to_a
