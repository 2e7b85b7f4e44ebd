"""One ramp through one target: a fresh engine and target, started once, and every level of
the ramp sent to it back to back by closed-loop users (``loadtests.loadgen.closed_loop``).

Method: the fleet and the target come up (``loadtests.peers.load_suite.serving``); one load
client (one clock) sends the levels in order, each level's users starting once the previous
level's last answer came; a ``Watcher`` polls the engine's ``/metrics`` every 50 ms (and the
gateway's every 250 ms) for the whole ramp; the gateway's ``/metrics`` text is read at the end
of every level (its refusals by reason). Records, samples and level times go to ``out``.

Parameters: ``refusal_pause_cap_s`` (a refused user waits its Retry-After up to this),
``first_token_timeout_s``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx2 as httpx

from loadtests.loadgen.client import ClientConfig, LoadClient, Target
from loadtests.loadgen.closed_loop import closed_loop
from loadtests.loadgen.fleet import replicas
from loadtests.loadgen.record import RequestRecord
from loadtests.loadgen.report import write_jsonl
from loadtests.peers.load_suite import Bench, client_targets, serving
from loadtests.slo.drive import STREAM_ALLOWANCE_S
from loadtests.slo.ramps import Level, Ramp
from loadtests.slo.watch import Watched, Watcher


@dataclass(frozen=True, slots=True)
class LevelRun:
    level: Level
    records: list[RequestRecord]
    start_s: float
    end_s: float
    metrics_text: str | None  # the gateway's /metrics at the level's end (None: others)


@dataclass(frozen=True, slots=True)
class RampRun:
    levels: list[LevelRun]
    watched: Watched


async def _metrics(http: httpx.AsyncClient, url: str | None) -> str | None:
    if url is None:
        return None
    try:
        response = await http.get(url)
    except httpx.HTTPError:
        return None
    return response.text if response.status_code == 200 else None


async def drive_ramp(
    ramp: Ramp,
    targets: list[Target],
    engine_url: str,
    gateway_url: str | None,
    first_token_timeout_s: float,
    refusal_pause_cap_s: float,
) -> RampRun:
    """Every level through ``targets``, watched (see the module doc)."""
    config = ClientConfig(targets=targets, first_token_timeout_s=first_token_timeout_s,
                          request_timeout_s=first_token_timeout_s + STREAM_ALLOWANCE_S)  # fmt: skip
    client = LoadClient(config)
    watcher = Watcher(engine_url, gateway_url, client.now)
    watching = asyncio.create_task(watcher.run())
    metrics_url = None if gateway_url is None else gateway_url + "/metrics"
    runs = []
    try:
        async with httpx.AsyncClient(timeout=10.0, trust_env=False) as http:
            for level in ramp.levels:
                start = client.now()
                records = await closed_loop(client, level.plan, level.concurrency,
                                            refusal_pause_cap_s=refusal_pause_cap_s)  # fmt: skip
                end = client.now()
                runs.append(LevelRun(level, records, start, end, await _metrics(http, metrics_url)))
    finally:
        watching.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watching
        await client.aclose()
    return RampRun(runs, watcher.watched)


def _save(run: RampRun, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(out / "records.jsonl",
                [{**r.to_dict(), "level": lv.level.load} for lv in run.levels
                 for r in lv.records])  # fmt: skip
    levels = [{"load": lv.level.load, "start_s": lv.start_s, "end_s": lv.end_s}
              for lv in run.levels]  # fmt: skip
    samples = {"levels": levels, "engine": [asdict(s) for s in run.watched.engine],
               "gateway": [asdict(s) for s in run.watched.gateway],
               "failures": run.watched.failures}  # fmt: skip
    (out / "watch.json").write_text(json.dumps(samples) + "\n")
    for lv in run.levels:
        if lv.metrics_text is not None:
            (out / f"metrics-{lv.level.load}.txt").write_text(lv.metrics_text)


def run_ramp(name: str, ramp: Ramp, bench: Bench, out: Path, first_token_timeout_s: float,
             refusal_pause_cap_s: float) -> RampRun:  # fmt: skip
    """The ramp through target ``name`` on a fresh one-engine fleet; records to ``out``."""
    engine = replicas(bench.fleet)[0].url
    with serving(name, bench, out) as launch:
        gateway = launch.url if name == "gateway" else None
        run = asyncio.run(drive_ramp(ramp, client_targets(launch, bench.front), engine, gateway,
                                     first_token_timeout_s, refusal_pause_cap_s))  # fmt: skip
    _save(run, out)
    return run
