"""Small builders shared by the gateway unit tests."""

from __future__ import annotations

from textwrap import dedent

from gateway.backends.state import BackendState, Health
from gateway.policy.compile import BackendSpec, CompiledPolicy
from gateway.policy.loader import load_policy_text
from gateway.schema import Engine

MINIMAL_POLICY = """\
backends:
  - name: small-1
    url: http://127.0.0.1:8001
    model: org/small
    pool: small
models:
  fast:
    pool: small
"""


def policy(text: str) -> CompiledPolicy:
    """Compile a policy from (possibly indented) YAML text."""
    return load_policy_text(dedent(text))


def spec(
    name: str,
    *,
    pool: str = "small",
    url: str | None = None,
    max_inflight: int = 4,
    engine: Engine = Engine.VLLM,
) -> BackendSpec:
    return BackendSpec(
        name=name,
        url=url or f"http://127.0.0.1:9/{name}",
        engine=engine,
        served_model="org/model",
        pool=pool,
        max_inflight=max_inflight,
    )


def state(
    name: str,
    *,
    pool: str = "small",
    health: Health = Health.HEALTHY,
    inflight: int = 0,
    max_inflight: int = 4,
) -> BackendState:
    return BackendState(
        spec(name, pool=pool, max_inflight=max_inflight), inflight=inflight, health=health
    )
