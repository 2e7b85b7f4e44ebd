"""Find the replicas of the backends that name a DNS name (``discover``), again and again.

Algorithm: every entry with ``discover`` is resolved when its ``interval_s`` has passed since
its last resolution (the loop wakes at the soonest such time). Its addresses get stable slots
(``SlotTable``: an address keeps its slot while it is found, a new address takes the lowest
free slot, at most ``max_replicas``; the rest wait for a free slot and are logged). When any
entry's set changed, the policy is recompiled with the new replicas and swapped in
(``PolicyHolder.rediscover``): a new replica starts unhealthy and takes traffic once a health
probe passed (``on_change`` probes at once), a vanished one is dropped from its pool (no new
request goes there; those in flight finish on their lease). An answer with no address (a
headless Service without a ready pod: ``NoAddress``) empties the set; any other failure to
resolve (the resolver down, a timeout) keeps the replicas found last, so a DNS outage never
takes a fleet away.

The resolver is a seam (``Resolver``): the default asks the system (``getaddrinfo``, as the
pods' own lookups go: /etc/hosts, the cluster DNS); tests give their own.

Parameters: per entry ``discover`` (dns, port, interval_s, max_replicas); ``resolver``,
``clock``, ``sleep`` (injectable).
"""

from __future__ import annotations

import asyncio
import logging
import math
import socket
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

from gateway.policy.compile import CompiledPolicy
from gateway.policy.discovered import Found, Replicas, discovering
from gateway.schema import Discover

log = logging.getLogger(__name__)


class NoAddress(Exception):
    """The name exists in no record (no replica right now), as opposed to a failed lookup."""


class Resolver(Protocol):
    async def __call__(self, host: str, port: int) -> list[str]:
        """The addresses of ``host``; raises ``NoAddress`` when it has none, ``OSError``
        when the lookup failed."""
        ...


_NO_SUCH_NAME = {socket.EAI_NONAME, getattr(socket, "EAI_NODATA", socket.EAI_NONAME)}


async def system_resolver(host: str, port: int) -> list[str]:
    """``getaddrinfo`` on the running loop (in its thread pool): each address once."""
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        if exc.errno in _NO_SUCH_NAME:
            raise NoAddress(host) from exc
        raise
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


@dataclass
class SlotTable:
    """Stable small numbers for a changing set of addresses (see the module doc)."""

    max_slots: int
    slots: dict[str, int] = field(default_factory=dict)  # address -> slot

    def update(self, addresses: Iterable[str]) -> list[str]:
        """Take the addresses found now; the ones left out for want of a slot."""
        now = list(dict.fromkeys(addresses))
        self.slots = {a: s for a, s in self.slots.items() if a in now}
        taken = set(self.slots.values())
        free = (s for s in range(self.max_slots) if s not in taken)
        left_out = []
        for address in sorted(a for a in now if a not in self.slots):
            slot = next(free, None)
            if slot is None:
                left_out.append(address)
            else:
                self.slots[address] = slot
        return left_out

    def replicas(self, discover: Discover) -> Replicas:
        pairs = sorted((slot, address) for address, slot in self.slots.items())
        return Replicas(discover.dns, discover.port, tuple(pairs))


class Discovery:
    """The replicas found so far, per discovering entry, and the loop that refreshes them."""

    def __init__(
        self,
        resolver: Resolver = system_resolver,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._resolver = resolver
        self._clock = clock
        self._tables: dict[str, tuple[Discover, SlotTable]] = {}
        self._due: dict[str, float] = {}

    async def refresh(self, policy: CompiledPolicy, *, all_due: bool = False) -> Found | None:
        """Resolve the entries that are due (``all_due``: every one); the replicas of every
        entry when they differ from the ones ``policy`` was compiled with, else None."""
        entries = [(e.name, e.discover) for e in discovering(policy.source) if e.discover]
        names = {name for name, _ in entries}
        self._tables = {k: v for k, v in self._tables.items() if k in names}
        now = self._clock()
        due = [(n, d) for n, d in entries if all_due or self._due.get(n, -math.inf) <= now]
        await asyncio.gather(*(self._resolve(name, discover) for name, discover in due))
        for name, discover in due:
            self._due[name] = now + discover.interval_s
        found = self.found()
        return None if found == dict(policy.found) else found

    def found(self) -> dict[str, Replicas]:
        return {name: table.replicas(discover) for name, (discover, table) in self._tables.items()}

    async def _resolve(self, name: str, discover: Discover) -> None:
        old = self._tables.get(name)
        same = old is not None and (old[0].dns, old[0].port) == (discover.dns, discover.port)
        table = old[1] if old is not None and same else SlotTable(discover.max_replicas)
        try:
            addresses = await self._resolver(discover.dns, discover.port)
        except NoAddress:
            addresses = []
        except OSError as exc:
            log.warning("resolving %s for backend %s failed, keeping its replicas: %s",
                        discover.dns, name, exc)  # fmt: skip
            return
        before = dict(table.slots)
        table.max_slots = discover.max_replicas
        left_out = table.update(addresses)
        if left_out:
            log.warning("backend %s: %d addresses of %s beyond max_replicas (%d) left out",
                        name, len(left_out), discover.dns, discover.max_replicas)  # fmt: skip
        self._tables[name] = (discover, table)
        if table.slots != before:
            shown = sorted(table.slots, key=table.slots.__getitem__) or "no address"
            log.info("backend %s: %s resolves to %s", name, discover.dns, shown)

    def next_due(self, policy: CompiledPolicy) -> float | None:
        """Seconds until the soonest entry is due (None: nothing discovers)."""
        entries = discovering(policy.source)
        if not entries:
            return None
        now = self._clock()
        return max(0.0, min(self._due.get(e.name, now) for e in entries) - now)

    async def run(
        self,
        current: Callable[[], CompiledPolicy],
        rediscover: Callable[[Found], Awaitable[object]],
        on_change: Callable[[], Awaitable[None]],
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        idle_s: float = 5.0,
    ) -> None:
        """Refresh forever: swap the replicas in when they change, then ``on_change`` (the
        health probes); with nothing to discover, look again every ``idle_s`` (a reload may
        add an entry)."""
        while True:
            wait = self.next_due(current())
            await sleep(idle_s if wait is None else wait)
            try:
                found = await self.refresh(current())
                if found is not None:
                    await rediscover(found)
                    await on_change()
            except Exception:  # a bug here must not end discovery for good: say it, go on
                log.exception("discovery round failed; the replicas found last stay")
