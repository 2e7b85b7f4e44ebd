"""Pools without ``max_context`` take the smallest context their backends serve; the policy's
own setting wins; the policy holder keeps the refinement across reloads."""

from __future__ import annotations

from gateway.policy import load_policy_text
from gateway.policy.reload import PolicyHolder
from gateway.policy.served_limits import with_served_context

POLICY = """
backends:
  - {name: s0, url: "http://127.0.0.1:1", model: m, pool: small}
  - {name: s1, url: "http://127.0.0.1:2", model: m, pool: small}
  - {name: l0, url: "http://127.0.0.1:3", model: m, pool: large}
  - {name: e0, url: "http://127.0.0.1:4", model: m, pool: edge}
models:
  m: {pool: small}
pools:
  large: {max_context: 8000}
"""


def test_pools_take_the_smallest_served_context() -> None:
    policy = load_policy_text(POLICY)
    refined = with_served_context(policy, {"s0": 32768, "s1": 16384, "l0": 131072})
    contexts = {name: p.settings.max_context for name, p in refined.pools.items()}
    assert contexts == {"small": 16384, "large": 8000, "edge": None}
    assert refined.checks_context
    assert refined.digest == policy.digest
    assert with_served_context(policy, {}) is policy


def test_the_holder_refines_every_policy_it_holds() -> None:
    holder = PolicyHolder(load_policy_text(POLICY))
    holder.refine(lambda p: with_served_context(p, {"e0": 4096}))
    assert holder.current.pools["edge"].settings.max_context == 4096
    holder.refine(lambda p: with_served_context(p, {"e0": 2048}))  # from the compiled one
    assert holder.current.pools["edge"].settings.max_context == 2048
    holder.swap(load_policy_text(POLICY.replace("models:\n", "models:\n  n: {pool: edge}\n")))
    assert holder.current.pools["edge"].settings.max_context == 2048
    assert "n" in holder.current.models
