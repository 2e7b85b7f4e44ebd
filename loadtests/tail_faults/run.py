"""One scenario through one target: a fresh fleet (with the scenario's faults) and target,
the planned requests open loop, the replicas' counters read before both stop.

Method (``loadtests.peers.load_suite``'s): every run starts its own fleet and target and
stops both after the last answer, so no run inherits another's queues or caches. Clients
keep each answer's text (``ClientConfig.keep_text``) for the intact check. The replicas'
``sim_requests_total`` (generation requests they received), ``sim_stalls_total``,
``sim_stream_deaths_total`` and ``sim_continuations_total`` are summed over the fleet; the
gateway's ``/metrics`` are kept when the target is a gateway.

Parameters: ``first_token_timeout_s`` (the client gives up without a first token by then),
``STREAM_ALLOWANCE_S`` (and on the rest of the answer after that).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

import httpx2 as httpx

from loadtests.loadgen.client import ClientConfig, LoadClient, Target
from loadtests.loadgen.record import RequestRecord
from loadtests.loadgen.report import write_jsonl
from loadtests.loadgen.request import PlannedRequest
from loadtests.loadgen.sampler import read_counters
from loadtests.peers.load_suite import Bench, client_targets, serving
from loadtests.tail_faults.scenarios import Scenario
from loadtests.tail_faults.targets import peer_and_bench, replica_metrics

STREAM_ALLOWANCE_S = 120.0
COUNTERS = ("sim_requests_total", "sim_stalls_total", "sim_stream_deaths_total",
            "sim_continuations_total")  # fmt: skip


@dataclass(frozen=True, slots=True)
class RunResult:
    records: list[RequestRecord]
    fleet: dict[str, float]  # the replicas' counters, summed ({}: unread)
    metrics_text: str | None  # the gateway's /metrics after the run


async def drive(
    plan: tuple[PlannedRequest, ...], targets: list[Target], first_token_timeout_s: float
) -> list[RequestRecord]:
    config = ClientConfig(targets=targets, first_token_timeout_s=first_token_timeout_s,
                          request_timeout_s=first_token_timeout_s + STREAM_ALLOWANCE_S,
                          keep_text=True)  # fmt: skip
    client = LoadClient(config)
    try:
        return await client.run(plan)
    finally:
        await client.aclose()


def _scrape(url: str) -> str | None:
    try:
        with httpx.Client(timeout=10.0, trust_env=False) as http:
            response = http.get(url)
    except httpx.HTTPError:
        return None
    return response.text if response.status_code == 200 else None


def run_target(
    name: str,
    scenario: Scenario,
    bench: Bench,
    policies: dict[str, str],
    out: Path,
    first_token_timeout_s: float,
) -> RunResult:
    """The scenario through target ``name``; records and counters written to ``out``."""
    peer, bench = peer_and_bench(name, bench, policies)
    with serving(peer, bench, out) as launch:
        targets = client_targets(launch, bench.front)
        records = asyncio.run(drive(scenario.plan, targets, first_token_timeout_s))
        try:
            fleet = read_counters(replica_metrics(scenario.fleet), COUNTERS)
        except httpx.HTTPError:
            fleet = {}  # a replica did not answer: the run reports its counters as unread
        metrics = _scrape(launch.url + "/metrics") if peer == "gateway" else None
    write_jsonl(out / "records.jsonl", [r.to_dict() for r in records])
    write_jsonl(out / "fleet-counters.jsonl", [fleet])
    if metrics is not None:
        (out / "metrics.txt").write_text(metrics)
    return RunResult(records, fleet, metrics)
