"""Cluster-wide admission: the lease algorithm shared by gateway replicas through Redis.

Every pool has one cluster limit ``L`` (the pool's concurrency limit in the policy). A request
may run only while it holds a lease; leases live in Redis, in three sorted sets per pool,
each scored by an expiry time taken from the Redis server's own clock (``TIME`` inside the
scripts, so replicas' clocks never need to agree):

* ``leases``: one member per request in flight anywhere in the cluster;
* ``replicas``: one member per live replica serving the pool (its heartbeat);
* ``waiting``: one member per replica that has requests queued for want of a lease.

Acquire (one script, atomic, for a batch of ``k`` requests that arrived together): drop
expired members of all three sets; with ``n`` leases, ``r`` live replicas (at least 1), the
fair share ``s = ceil(L / r)``, the caller's ``h`` leases in flight and ``w`` other replicas
waiting, grant the first ``g = clamp(min(k, L - n), 0, k)`` of the batch, and when ``w > 0``
at most ``s - h`` of them: a replica may go past its fair share only while nobody else
waits, so a busy replica cannot starve a quieter one, and no capacity idles when only one
replica is busy. A caller refused any lease marks itself waiting for
``max(4 * poll_s, 2 * op_timeout_s)`` (it re-marks on every retry, once per ``poll_s``).
Batching keeps Redis at one call in flight per pool and replica, whatever the request rate.
Needs Redis 5 or newer (``TIME`` in scripts).

Release removes the leases (batched the same way). Renew (every ``renew_interval_s``)
pushes the expiry of the replica's heartbeat and of every lease it holds to
``now + lease_ttl_s``; a replica that dies stops renewing, and its leases and heartbeat
vanish ``lease_ttl_s`` later, which gives their capacity back to the others. After a Redis
outage, or when its own heartbeat is found gone (Redis restarted empty), the renewal re-adds
the leases of requests still in flight, so the count is true again at once.

When Redis cannot be reached (timeout or connection error), a replica falls back to its
*local share* ``ceil(L / r)``, with ``r`` the live replicas it last saw
(``fallback_replicas`` if it never reached Redis), and keeps serving; it rejoins when a
later call (a renewal) succeeds. ``LinkState`` is that two-state machine; it reports
transitions so each is logged once. A replica that held more than its share when Redis
went keeps those requests; it admits no more until it is back under its share, so the
cluster may pass ``L`` for as long as those requests last, by at most ``L - share``.

Parameters (policy ``cluster:``)
    ``lease_ttl_s``       a dead replica's leases and heartbeat expire after this long.
    ``renew_interval_s``  renewal and heartbeat period; at most ``lease_ttl_s / 2``.
    ``op_timeout_s``      longest a Redis call may take before the replica falls back.
    ``poll_s``            how often a replica with waiters retries a full cluster.
    ``fallback_replicas`` replicas assumed for the local share before Redis was ever read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import IntEnum

# Lua: KEYS = leases, waiting, replicas;
# ARGV = replica id, limit, held, lease ttl ms, waiting ttl ms, key ttl ms, lease ids...
ACQUIRE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for i = 1, 3 do redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now) end
local limit, held = tonumber(ARGV[2]), tonumber(ARGV[3])
local asked = #ARGV - 6
local count = redis.call('ZCARD', KEYS[1])
local replicas = math.max(1, redis.call('ZCARD', KEYS[3]))
local others = redis.call('ZCARD', KEYS[2])
if redis.call('ZSCORE', KEYS[2], ARGV[1]) then others = others - 1 end
local room = limit - count
if others > 0 then room = math.min(room, math.ceil(limit / replicas) - held) end
local granted = math.max(0, math.min(room, asked))
for i = 1, granted do
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[4]), ARGV[6 + i])
end
if granted < asked then
  redis.call('ZADD', KEYS[2], now + tonumber(ARGV[5]), ARGV[1])
else
  redis.call('ZREM', KEYS[2], ARGV[1])
end
for i = 1, 3 do redis.call('PEXPIRE', KEYS[i], ARGV[6]) end
return {granted, count + granted, replicas}
"""

# Lua: KEYS = leases, replicas; ARGV = replica id, lease ttl ms, key ttl ms, re-add (0/1),
# lease ids... A normal renewal only updates leases still present (XX), so a lease released
# by a concurrent call is not brought back. The leases are re-added after an outage, and
# also when the replica's own heartbeat was gone (Redis restarted empty, or this replica
# stalled past the TTL): then Redis has lost them too.
RENEW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expiry = now + tonumber(ARGV[2])
for i = 1, 2 do redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now) end
local lost = redis.call('ZADD', KEYS[2], expiry, ARGV[1]) == 1
for i = 5, #ARGV do
  if lost or ARGV[4] == '1' then
    redis.call('ZADD', KEYS[1], expiry, ARGV[i])
  else
    redis.call('ZADD', KEYS[1], 'XX', expiry, ARGV[i])
  end
end
for i = 1, 2 do redis.call('PEXPIRE', KEYS[i], ARGV[3]) end
return {redis.call('ZCARD', KEYS[1]), redis.call('ZCARD', KEYS[2])}
"""


def local_share(limit: int, replicas: int) -> int:
    """A replica's share of a cluster limit: ``ceil(limit / replicas)``, at least 1."""
    return max(1, math.ceil(limit / max(1, replicas)))


def pool_keys(prefix: str, pool: str) -> tuple[str, str, str]:
    """The pool's (leases, waiting, replicas) keys; the hash tag keeps them in one slot."""
    base = f"{prefix}:{{{pool}}}"
    return f"{base}:leases", f"{base}:waiting", f"{base}:replicas"


@dataclass(frozen=True, slots=True)
class AcquireReply:
    granted: int  # the first ``granted`` leases of the batch were granted
    leases: int  # leases in the cluster after the call
    replicas: int  # live replicas of the pool


@dataclass(frozen=True, slots=True)
class RenewReply:
    leases: int
    replicas: int


def acquire_reply(raw: object) -> AcquireReply:
    granted, leases, replicas = _ints(raw, 3)
    return AcquireReply(granted, leases, replicas)


def renew_reply(raw: object) -> RenewReply:
    leases, replicas = _ints(raw, 2)
    return RenewReply(leases, replicas)


def _ints(raw: object, n: int) -> list[int]:
    if not isinstance(raw, list) or len(raw) != n:
        raise ValueError(f"unexpected script reply {raw!r}")
    return [int(x) for x in raw]


class Mode(IntEnum):
    LOCAL = 0  # Redis unreachable: the local share applies
    CLUSTER = 1


class LinkState:
    """Cluster or local mode of the replica's link to Redis.

    Starts in cluster mode; ``failed`` and ``succeeded`` return True exactly when the mode
    changes, so the caller logs transitions, not every request.
    """

    __slots__ = ("mode",)

    def __init__(self) -> None:
        self.mode = Mode.CLUSTER

    def failed(self) -> bool:
        changed = self.mode is Mode.CLUSTER
        self.mode = Mode.LOCAL
        return changed

    def succeeded(self) -> bool:
        changed = self.mode is Mode.LOCAL
        self.mode = Mode.CLUSTER
        return changed
