"""Expand a policy's discovering backends (``discover:``) into the replicas found for them.

Algorithm: every backend entry with ``discover`` is replaced by one listed backend per
address found for it, in slot order: ``<name>-<slot>`` at ``discover.url_of(address)``, every
other field (engine, model, pool, max_inflight, keys, TLS, routes) the entry's. Slots are
small stable numbers (``backends/discovery.py`` keeps them: an address keeps its slot while
it stays, a new one takes the lowest free slot), so names, metric labels and per-replica
state survive other replicas coming and going, and label values stay bounded by
``max_replicas``. An entry with no address found yet (or none at all: no ready pod) becomes
a single backend named as the entry at the DNS name itself, so its pool exists and is
simply not ready until the name answers. ``Found`` is keyed by entry name; addresses found
for another DNS name or port (the entry was edited since) are not used.

Listed backends pass through unchanged; the result has no ``discover`` left, so the rest of
the compile step reads it as any policy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gateway.schema import Backend, Discover, Policy


@dataclass(frozen=True, slots=True)
class Replicas:
    """The addresses found for one discovering entry, by slot, and what they were found for."""

    dns: str
    port: int
    slots: tuple[tuple[int, str], ...]  # (slot, address), ascending slots

    def matches(self, discover: Discover) -> bool:
        return (self.dns, self.port) == (discover.dns, discover.port)


Found = Mapping[str, Replicas]


def replica_name(entry: str, slot: int) -> str:
    return f"{entry}-{slot}"


def discovering(policy: Policy) -> list[Backend]:
    """The entries that discover their replicas."""
    return [b for b in policy.backends if b.discover is not None]


def expand(policy: Policy, found: Found) -> tuple[Policy, frozenset[str]]:
    """``policy`` with every discovering entry replaced by its replicas (see the module doc),
    and the names of the backends that came from discovery."""
    if not discovering(policy):
        return policy, frozenset()
    backends: list[Backend] = []
    names: set[str] = set()
    for entry in policy.backends:
        if entry.discover is None:
            backends.append(entry)
        else:
            replicas = _replicas(entry, entry.discover, found.get(entry.name))
            backends += replicas
            names.update(b.name for b in replicas)
    return policy.model_copy(update={"backends": backends}), frozenset(names)


def _replicas(entry: Backend, discover: Discover, replicas: Replicas | None) -> Sequence[Backend]:
    base = {"discover": None}
    if replicas is None or not replicas.matches(discover) or not replicas.slots:
        return [entry.model_copy(update={**base, "url": discover.url_of(discover.dns)})]
    return [
        entry.model_copy(
            update={**base, "name": replica_name(entry.name, slot), "url": discover.url_of(ip)}
        )
        for slot, ip in replicas.slots
    ]
