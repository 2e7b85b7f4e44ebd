"""Discovery: stable slots for a changing set of addresses, entries resolved when due, an
empty answer empties a set, a failed lookup keeps it, and the loop swaps replicas in only when
they differ from the running policy's. A fake resolver and clock: no DNS, no waiting."""

from __future__ import annotations

import asyncio

import pytest

from gateway.backends.discovery import Discovery, NoAddress, SlotTable
from gateway.backends.registry import BackendRegistry
from gateway.backends.state import Health
from gateway.policy import load_policy_text
from gateway.policy.compile import CompiledPolicy, compile_policy
from gateway.policy.discovered import Found

# id -> (slots before, addresses now, max slots, slots after, left out)
SLOTS = {
    "first addresses, in order": (
        {},
        ["10.0.0.2", "10.0.0.1"],
        4,
        {"10.0.0.1": 0, "10.0.0.2": 1},
        [],
    ),
    "an address keeps its slot": ({"a": 0, "b": 1}, ["b", "c"], 4, {"b": 1, "c": 0}, []),
    "lowest free slot": ({"a": 0, "c": 2}, ["a", "c", "d"], 4, {"a": 0, "c": 2, "d": 1}, []),
    "beyond max left out": ({"a": 0}, ["a", "b", "c"], 2, {"a": 0, "b": 1}, ["c"]),
    "duplicates once": ({}, ["a", "a"], 4, {"a": 0}, []),
    "all gone": ({"a": 0}, [], 4, {}, []),
}


@pytest.mark.parametrize(
    ("before", "now", "cap", "after", "left"), SLOTS.values(), ids=SLOTS.keys()
)
def test_slots(
    before: dict[str, int], now: list[str], cap: int, after: dict[str, int], left: list[str]
) -> None:
    table = SlotTable(cap, dict(before))
    assert table.update(now) == left
    assert table.slots == after


POLICY = (
    "backends:\n"
    "  - {name: a, discover: {dns: a.svc, port: 80, interval_s: 10}, model: m, pool: p}\n"
    "  - {name: b, discover: {dns: b.svc, port: 80, interval_s: 30}, model: m, pool: p}\n"
    "models:\n  fast: {pool: p}\n"
)


class Names:
    def __init__(self) -> None:
        self.answers: dict[str, list[str] | Exception] = {
            "a.svc": ["10.0.0.1"],
            "b.svc": ["10.0.1.1"],
        }
        self.asked: list[str] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        self.asked.append(host)
        answer = self.answers[host]
        if isinstance(answer, Exception):
            raise answer
        return list(answer)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _with(policy: CompiledPolicy, found: Found) -> CompiledPolicy:
    return compile_policy(policy.source, found=found)


def _urls(policy: CompiledPolicy) -> dict[str, str]:
    return {b.name: b.url for b in policy.backends}


async def test_refresh_resolves_what_is_due_and_reports_only_changes() -> None:
    names, clock = Names(), Clock()
    discovery = Discovery(names, clock)
    policy = load_policy_text(POLICY)
    found = await discovery.refresh(policy, all_due=True)
    assert found is not None
    policy = _with(policy, found)
    assert _urls(policy) == {"a-0": "http://10.0.0.1:80", "b-0": "http://10.0.1.1:80"}
    assert await discovery.refresh(policy) is None  # nothing due
    clock.now += 10
    names.asked.clear()
    assert await discovery.refresh(policy) is None  # a is due, and unchanged
    assert names.asked == ["a.svc"]
    clock.now += 10
    names.answers["a.svc"] = ["10.0.0.1", "10.0.0.2"]
    found = await discovery.refresh(policy)
    assert found is not None
    assert _urls(_with(policy, found))["a-1"] == "http://10.0.0.2:80"


@pytest.mark.parametrize(
    ("failure", "kept"),
    [
        (NoAddress("a.svc"), False),  # no ready replica: the set empties
        (OSError("resolver timed out"), True),  # a failed lookup: the last set stays
    ],
)
async def test_an_empty_answer_empties_a_failed_lookup_keeps(
    failure: Exception, kept: bool
) -> None:
    names, clock = Names(), Clock()
    discovery = Discovery(names, clock)
    first = await discovery.refresh(load_policy_text(POLICY), all_due=True)
    assert first is not None
    policy = _with(load_policy_text(POLICY), first)
    names.answers["a.svc"] = failure
    clock.now += 10
    found = await discovery.refresh(policy)
    if kept:
        assert found is None
    else:
        assert found is not None
        assert _urls(_with(policy, found))["a"] == "http://a.svc:80"  # the name itself


async def test_nothing_discovered_nothing_asked() -> None:
    names = Names()
    listed = load_policy_text(
        "backends:\n  - {name: x, url: 'http://h:1', model: m, pool: p}\nmodels:\n  f: {pool: p}\n"
    )
    discovery = Discovery(names, Clock())
    assert await discovery.refresh(listed, all_due=True) is None
    assert discovery.next_due(listed) is None
    assert names.asked == []


async def test_discovered_replicas_wait_for_a_probe_listed_ones_do_not() -> None:
    policy = load_policy_text(
        POLICY.replace(
            "models:", "  - {name: c, url: 'http://10.9.9.9:1', model: m, pool: p}\nmodels:"
        )
    )
    discovery = Discovery(Names(), Clock())
    found = await discovery.refresh(policy, all_due=True)
    assert found is not None
    registry = BackendRegistry()
    registry.reconcile(_with(policy, found))
    assert {s.name: s.health for s in registry.all()} == {
        "a-0": Health.UNHEALTHY,
        "b-0": Health.UNHEALTHY,
        "c": Health.UNKNOWN,
    }


async def test_the_loop_swaps_changes_in_and_survives_a_failed_round() -> None:
    names, clock = Names(), Clock()
    discovery = Discovery(names, clock)
    policy = load_policy_text(POLICY)
    swapped: list[Found] = []
    probes = 0
    waits: list[float] = []

    async def rediscover(found: Found) -> None:
        nonlocal policy
        if not swapped and len(waits) == 1:
            swapped.append({})
            raise RuntimeError("compile blew up")  # the next round tries again
        swapped.append(found)
        policy = _with(policy, found)

    async def probe() -> None:
        nonlocal probes
        probes += 1

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        clock.now += seconds
        if len(waits) == 3:
            raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        await discovery.run(lambda: policy, rediscover, probe, sleep)
    assert _urls(policy) == {"a-0": "http://10.0.0.1:80", "b-0": "http://10.0.1.1:80"}
    assert probes == 1
    assert waits[0] == 0.0  # never resolved: due at once
