"""Dashboard snapshots between the workers of one host: as JSON, and added up.

``encoded``/``decoded`` carry a ``Snapshot`` over the workers' sockets (``host/peers.py``);
``combined`` is the host's snapshot: counters, histogram buckets and refusals added (each
worker counts its own requests), gauges added too (the queue depth: each worker's own
queue) except ``objective``, the pool's setting, which every worker shows alike (the
largest is kept).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import orjson

from gateway.dashboard.window import Snapshot

_SAME_ON_EVERY_WORKER = frozenset({"objective"})


def encoded(snap: Snapshot) -> bytes:
    return orjson.dumps(
        {
            "at": snap.at,
            "counters": snap.counters,
            "histograms": {
                # Bounds as text: JSON has no infinity ("+Inf" bucket).
                k: {pool: [[repr(le), n] for le, n in b] for pool, b in v.items()}
                for k, v in snap.histograms.items()
            },
            "gauges": snap.gauges,
            "shed": {
                pool: [[cause, prio, n] for (cause, prio), n in parts.items()]
                for pool, parts in snap.shed.items()
            },
        }
    )


def decoded(raw: bytes) -> Snapshot:
    data: dict[str, Any] = orjson.loads(raw)
    return Snapshot(
        float(data["at"]),
        data["counters"],
        {
            k: {pool: tuple((float(le), float(n)) for le, n in b) for pool, b in v.items()}
            for k, v in data["histograms"].items()
        },
        data["gauges"],
        {
            pool: {(str(c), str(p)): float(n) for c, p, n in parts}
            for pool, parts in data["shed"].items()
        },
    )


def combined(at: float, snaps: Iterable[Snapshot]) -> Snapshot:
    """The host's snapshot at ``at`` from its workers' (read at about the same time)."""
    counters: defaultdict[str, defaultdict[str, float]] = defaultdict(lambda: defaultdict(float))
    gauges: defaultdict[str, defaultdict[str, float]] = defaultdict(lambda: defaultdict(float))
    buckets: defaultdict[str, defaultdict[str, defaultdict[float, float]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(float))
    )
    shed: defaultdict[str, defaultdict[tuple[str, str], float]] = defaultdict(
        lambda: defaultdict(float)
    )
    for snap in snaps:
        for name, table in snap.counters.items():
            for pool, value in table.items():
                counters[name][pool] += value
        for name, table in snap.gauges.items():
            for pool, value in table.items():
                if name in _SAME_ON_EVERY_WORKER:
                    gauges[name][pool] = max(gauges[name].get(pool, value), value)
                else:
                    gauges[name][pool] += value
        for name, per_pool in snap.histograms.items():
            for pool, pairs in per_pool.items():
                for le, count in pairs:
                    buckets[name][pool][le] += count
        for pool, parts in snap.shed.items():
            for part, value in parts.items():
                shed[pool][part] += value
    histograms = {
        name: {pool: tuple(sorted(b.items())) for pool, b in per_pool.items()}
        for name, per_pool in buckets.items()
    }
    return Snapshot(at, counters, histograms, gauges, shed)
