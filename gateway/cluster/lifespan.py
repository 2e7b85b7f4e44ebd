"""Start and stop cluster admission with the app (when the policy's ``cluster`` says so)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import socket
from collections.abc import AsyncIterator, Callable
from typing import Protocol

from gateway.admission.lease_gate import LeaseGate
from gateway.cluster.lease_store import RedisLeaseStore
from gateway.cluster.pool_gate import ClusterAdmission
from gateway.metrics import GatewayMetrics
from gateway.policy.compile import CompiledPolicy


class Joining(Protocol):
    """What joining the cluster needs of the running gateway (``runtime.parts.Gateway`` has it)."""

    @property
    def policy(self) -> CompiledPolicy: ...

    @property
    def metrics(self) -> GatewayMetrics: ...

    def attach_lease_gates(self, gates: Callable[[str], LeaseGate]) -> None: ...


def replica_id() -> str:
    """Unique per process; host and pid first, so a Redis key listing is readable."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


@contextlib.asynccontextmanager
async def cluster_admission(gateway: Joining) -> AsyncIterator[ClusterAdmission | None]:
    """Join the cluster (or start in local mode if Redis is down); leave it on exit.

    The ``cluster`` section is read once, at start: changing it needs a restart.
    """
    settings = gateway.policy.source.cluster
    if not settings.enabled:
        yield None
        return
    cluster = ClusterAdmission(RedisLeaseStore(settings, replica_id()), gateway.metrics)

    def pools() -> list[str]:
        return list(gateway.policy.pools)

    # The first heartbeat before serving: the other replicas count this one from the start.
    await cluster.renew_all(pools())
    gateway.attach_lease_gates(cluster.pool)
    renewer = asyncio.create_task(cluster.run(pools), name="cluster-renewer")
    try:
        yield cluster
    finally:
        renewer.cancel()
        await asyncio.gather(renewer, return_exceptions=True)
        await cluster.close()
