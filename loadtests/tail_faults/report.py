"""The tail-fault benchmark's report: one Markdown table per scenario, the checks, and the
same figures as JSON (``<results>/<name>.md`` and ``.json``)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from loadtests.tail_faults.checks import Check, Rows
from loadtests.tail_faults.scenarios import Scenario

_COLUMNS = (
    ("TTFT p50 ms", "ttft_p50_ms"), ("TTFT p99 ms", "ttft_p99_ms"),
    ("p99 vs no-fault", "p99_vs_baseline"), ("intact", "intact"),
    ("looks complete, is not (truncated/altered)", "looks_complete_not"),
    ("error event", "error_event"), ("broken", "broken"), ("refused", "refused"),
    ("failed", "failed"), ("upstream req.", "upstream_requests"), ("extra", "extra_upstream"),
    ("stalls / deaths / continuations at the fleet", "faults_seen"),
)  # fmt: skip
_ADMISSION = (("goodput", "goodput"), ("shed", "shed"), ("admitted p99 ms", "admitted_p99_ms"),
              ("timeouts", "timeouts"))  # fmt: skip


def _cell(key: str, row: Mapping[str, Any]) -> str:
    value = row.get(key)
    if key == "looks_complete_not":
        return f"{value} ({row.get('truncated', 0)}/{row.get('altered', 0)})"
    if key == "intact":
        share = row.get("intact_share")
        return f"{value}/{row['requests']}" + ("" if share is None else f" ({share:.1%})")
    if key == "extra_upstream":
        share = row.get("extra_share")
        return (
            "-"
            if value is None
            else f"{value:+.0f}" + ("" if share is None else f" ({share:+.1%})")
        )
    if key == "faults_seen":
        fleet = row.get("fleet") or {}
        if not fleet:
            return "unread"
        keys = ("sim_stalls_total", "sim_stream_deaths_total", "sim_continuations_total")
        return " / ".join(f"{fleet.get(k, 0):.0f}" for k in keys)
    if key in ("goodput", "shed"):
        return "-" if value is None else f"{value:.1%}"
    if key == "p99_vs_baseline":
        return "-" if value is None else f"{value:.2f}x"
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 10 else f"{value:.1f}"
    return "-" if value is None else str(value)


def table(scenario: Scenario, rows: Mapping[str, Mapping[str, Any]]) -> list[str]:
    columns = _COLUMNS + (_ADMISSION if scenario.name == "saturation" else ())
    lines = [f"## {scenario.title} (`{scenario.name}`)", "", scenario.note, "",
             "| target | " + " | ".join(c for c, _ in columns) + " |",
             "|---" * (len(columns) + 1) + "|"]  # fmt: skip
    for target, row in rows.items():
        if row.get("status"):
            lines.append(f"| {target} | {row['status']} |" + " |" * (len(columns) - 1))
            continue
        cells = [_cell(key, row) for _, key in columns]
        lines.append(f"| {target} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def markdown(scenarios: Sequence[Scenario], rows: Rows, checks: Sequence[Check],
             meta: Mapping[str, Any], notes: Mapping[str, str]) -> str:  # fmt: skip
    lines = ["# Tail faults after dispatch: stalls, deaths, recovery (issue 32)", ""]
    lines += [f"- {k}: {v}" for k, v in meta.items()]
    lines += ["", "Targets:", *[f"- {t}: {n}" for t, n in notes.items()], ""]
    lines += ["Columns: TTFT at the client over the requests passed on (no first token: the "
              "client timeout); *intact*: text equal to the uninterrupted answer; *looks "
              "complete, is not*: ended with [DONE] or a clean close, text shorter (truncated) "
              "or different (altered); *broken*: connection cut or client timeout; *upstream "
              "req.*: generation requests the replicas received; *extra*: over the requests "
              "the target passed on.", ""]  # fmt: skip
    for sc in scenarios:
        if sc.name in rows:
            lines += table(sc, rows[sc.name])
    lines += ["## Checks (issue 32's targets)", "", "| check | target | measured | verdict |",
              "|---|---|---|---|"]  # fmt: skip
    lines += [f"| {c.name} | {c.target} | {c.measured} | {c.verdict()} |" for c in checks]
    return "\n".join([*lines, ""])


def write(results: Path, name: str, scenarios: Sequence[Scenario], rows: Rows,
          checks: Sequence[Check], meta: Mapping[str, Any],
          notes: Mapping[str, str]) -> Path:  # fmt: skip
    results.mkdir(parents=True, exist_ok=True)
    path = results / f"{name}.md"
    path.write_text(markdown(scenarios, rows, checks, meta, notes))
    data = {"meta": dict(meta), "rows": rows,
            "checks": [{"name": c.name, "target": c.target, "measured": c.measured,
                        "verdict": c.verdict()} for c in checks]}  # fmt: skip
    (results / f"{name}.json").write_text(json.dumps(data, indent=2, default=str) + "\n")
    return path
