"""The targets of the tail-fault benchmark and the gateway's two policies.

Targets (``TARGETS``): ``direct`` (clients round-robin over the replicas), ``gateway`` (the
DEFAULT policy: backends and models only, so recovery on, as a new user gets it),
``gateway-off`` (the same plus ``RECOVERY_OFF`` in every pool: no hedging, no stream
continuation), and the peers of ``loadtests.peers``: LiteLLM (least-busy), vllm-router
(round robin), nginx (least_conn, no cap). LiteLLM is left out by default (it takes ~25 s to
start and its install is large): ``--targets`` adds it.

A policy the gateway under test does not accept (``policy_problem``: the schema's own
validation, run before anything starts) is reported as such and that target skipped; the
recovery keys are refused by a gateway that predates them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import yaml

from gateway.policy import load_policy_text
from gateway.schema.problems import PolicyError
from loadtests.loadgen.fleet import replicas
from loadtests.peers.load_suite import Bench
from loadtests.peers.targets import Setup
from loadtests.sim.fleet import FleetConfig
from loadtests.slo.bench import default_policy

TARGETS = ("direct", "gateway", "gateway-off", "vllm-router", "nginx", "litellm")
DEFAULT_TARGETS = ("direct", "gateway", "gateway-off", "vllm-router", "nginx")
QUICK_TARGETS = ("direct", "gateway", "gateway-off")
PEERS = ("litellm", "vllm-router", "nginx")
# The pool keys that turn recovery off (issue 32's schema: pools.<name>.recovery).
RECOVERY_OFF: dict[str, Any] = {"recovery": {"hedge": False, "continue_streams": False}}


def recovery_off_policy(policy: dict[str, Any]) -> dict[str, Any]:
    """``policy`` with ``RECOVERY_OFF`` merged into every pool its backends name."""
    pools: dict[str, Any] = dict(policy.get("pools") or {})
    for name in sorted({str(b["pool"]) for b in policy["backends"]}):
        pools[name] = {**(pools.get(name) or {}), **RECOVERY_OFF}
    return {**policy, "pools": pools}


def policy_problem(text: str) -> str | None:
    """Why the gateway under test refuses the policy (its schema's words), or ``None``."""
    try:
        load_policy_text(text, source="tail-faults policy")
    except PolicyError as exc:
        return str(exc).replace("\n", "; ")
    return None


def policies(fleet: FleetConfig) -> dict[str, str]:
    """The gateway targets' policy texts for ``fleet``."""
    on = default_policy(fleet)
    return {
        "gateway": yaml.safe_dump(on, sort_keys=False),
        "gateway-off": yaml.safe_dump(recovery_off_policy(on), sort_keys=False),
    }


def setup() -> Setup:
    return Setup(litellm_strategy="least-busy", router_policy="round_robin",
                 nginx_balance="least_conn", nginx_limit=None, router_limit=None,
                 gateway_note="default policy (recovery on)")  # fmt: skip


def notes() -> dict[str, str]:
    found = setup().notes()
    found["gateway-off"] = "default policy + every pool: recovery {hedge: false, " \
        "continue_streams: false}"  # fmt: skip
    return found


def peer_and_bench(name: str, bench: Bench, texts: dict[str, str]) -> tuple[str, Bench]:
    """The launcher's target name and the bench it runs on (the gateway's policy in front)."""
    if name in texts:
        return "gateway", replace(bench, front=replace(bench.front, gateway_policy=texts[name]))
    return name, bench


def replica_metrics(fleet: FleetConfig) -> list[str]:
    return [r.url + "/metrics" for r in replicas(fleet)]
