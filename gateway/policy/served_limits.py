"""A pool's context window from what its backends serve, when the policy sets none.

Algorithm: for every pool without ``max_context``, the smallest ``max_model_len`` any of its
backends reported (``backends/served_context.py``) becomes its ``max_context``: a request
that fits no replica is refused by the gateway with the 400 ``context_length_exceeded`` the
policy's own ``max_context`` gives, and fallback and degrade skip the pool. A pool whose
backends said nothing is left as it is; a ``max_context`` in the policy always wins. The
result is the same policy (same digest: nothing was reloaded) with those pools replaced.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType

from gateway.policy.compile import CompiledPolicy, PoolSpec


def with_served_context(policy: CompiledPolicy, served: Mapping[str, int]) -> CompiledPolicy:
    pools: dict[str, PoolSpec] = {}
    for name, pool in policy.pools.items():
        known = [served[b.name] for b in pool.backends if b.name in served]
        if pool.settings.max_context is None and known:
            settings = pool.settings.model_copy(update={"max_context": min(known)})
            pool = replace(pool, settings=settings)
        pools[name] = pool
    if all(pools[name] is pool for name, pool in policy.pools.items()):
        return policy
    return replace(policy, pools=MappingProxyType(pools), checks_context=True)
