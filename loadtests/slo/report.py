"""The benchmark's report: ``<name>.md`` (per scenario a table, then the targets' verdicts)
and ``<name>.json`` (every row and the run's metadata). ``render`` is pure.

Parameters: ``sections`` (per scenario: its title, notes and rows, in run order), ``meta``
(command, dates, machine load, capacity, versions), ``notes`` (each target's configuration).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loadtests.slo.checks import check_targets
from loadtests.slo.ramp_checks import check_new_rows
from loadtests.slo.ramp_tables import ramp_table
from loadtests.slo.tables import scenario_table, verdicts_table

COLUMNS_HELP = (
    "Columns: goodput = share of the requests sent that were served with their first token "
    "within their objective (2 s; 2 s + 1 s per 1,000 prompt tokens beyond 2,000); vs direct = "
    "that goodput over direct round-robin's on the same arrivals; admitted TTFT = served "
    "requests' time to first token at the client; p99 TTFT / objective = 99th percentile of "
    "each served request's TTFT over its own objective (<= 1: within); shed = share refused "
    "(429/503); p99 TTFT / deadline = the same over each request's deadline (3x its objective); "
    "shed beyond excess = shed minus max(0, 1 - 1/multiple), the share that must go "
    "at that load; client timeouts = requests the client gave up on (no first token within "
    "the client timeout); refusal p95 / p99 = "
    "send-to-answer time of refusals at the client; at arrival = the same over the refusals "
    "decided at arrival (x-gateway-queue-ms 0); after a wait = how many refusals waited for a "
    "slot first, and how many of them reached the client past their deadline; answered in "
    "time = served or refused within objective + 1 s; Retry-After retries served = of the "
    "refusals that advised a delay, the share whose one retry after that delay was served "
    "(steady scenario only: those clients honour Retry-After); predictor error = p50 / p90 "
    "of the gateway's gateway_ttft_prediction_error_seconds after the run (n/a: the gateway "
    "does not export it)."
)
RAMP_HELP = (
    "Ramp columns: closed-loop users (each sends its next request when the last one ended; a "
    "refused one first waits its Retry-After, at most 1 s), levels back to back on one target "
    "started once; refused = 429/503, at arrival or after a wait by x-gateway-queue-ms; "
    "refusals by reason = the gateway's gateway_shed_total during the level; served / s = "
    "requests served per second of the level; engine waiting = vllm:num_requests_waiting "
    "polled every 50 ms; moments in seconds since the ramp started, each the first in its "
    "level: engine waiting first (> 0), TTFT rise (a request went threshold = 2x the first "
    "level's TTFT p99 without its first token), first refusal (reached its client), pool "
    "saturated (the gateway's gateway_pool_state, polled every 250 ms)."
)


@dataclass
class Section:
    scenario: str
    title: str
    notes: list[str] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    kind: str = "open"  # open (open-loop arrivals, scenario_table) or ramp (ramp_table)


def _meta_lines(meta: Mapping[str, Any]) -> list[str]:
    return [f"- {key}: {value}" for key, value in meta.items()]


def render(sections: Sequence[Section], meta: Mapping[str, Any],
           notes: Mapping[str, str]) -> str:  # fmt: skip
    rows = [r for s in sections for r in s.rows]
    checks = [*check_targets(rows), *check_new_rows(rows)]
    lines = ["# SLO benchmark (issues 18 and 31)", "", *_meta_lines(meta), "", "Targets:", ""]
    lines += [f"- `{name}`: {text}" for name, text in notes.items()]
    lines += ["", "## Targets of the issue", "", verdicts_table(checks), ""]
    for s in sections:
        table = ramp_table if s.kind == "ramp" else scenario_table
        lines += [f"## {s.title}", ""]
        lines += [f"- {n}" for n in s.notes]
        lines += ["", table(s.rows) if s.rows else "(no rows)", ""]
    lines += [COLUMNS_HELP, ""]
    if any(s.kind == "ramp" for s in sections):
        lines += [RAMP_HELP, ""]
    return "\n".join(lines)


def write(folder: Path, name: str, sections: Sequence[Section], meta: Mapping[str, Any],
          notes: Mapping[str, str]) -> Path:  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    text = render(sections, meta, notes)
    path = folder / f"{name}.md"
    path.write_text(text)
    data = {"meta": dict(meta), "targets": dict(notes),
            "sections": [s.__dict__ for s in sections]}  # fmt: skip
    (folder / f"{name}.json").write_text(json.dumps(data, indent=1, default=str) + "\n")
    return path
