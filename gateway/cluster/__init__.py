"""Cluster-wide admission: gateway replicas share each pool's limit through Redis leases.

``leases`` (the algorithm and its Lua scripts), ``store`` (the Redis edge), ``gate`` (the
per-pool lease gate, the link's mode, renewal), ``lifespan`` (start and stop with the app).
"""

from gateway.cluster.lease_store import LeaseStore, RedisLeaseStore, StoreUnavailable
from gateway.cluster.leases import LinkState, Mode, local_share
from gateway.cluster.lifespan import cluster_admission as lifespan
from gateway.cluster.pool_gate import ClusterAdmission, ClusterLink, PoolLeases

__all__ = [
    "ClusterAdmission",
    "ClusterLink",
    "LeaseStore",
    "LinkState",
    "Mode",
    "PoolLeases",
    "RedisLeaseStore",
    "StoreUnavailable",
    "lifespan",
    "local_share",
]
