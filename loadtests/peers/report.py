"""The comparison's report: ``report.md`` (tables, target checks, plots), ``summary.json``,
and ``summary.md`` (one row per target and suite, the README's form).

``render`` is pure (the Markdown text from the results and the run's metadata); ``write``
also draws the PNG plots next to it (``loadtests.peers.plots``) for the suites that ran.

Parameters: ``results`` (``Results``: each suite's rows and each scenario's configuration
notes), ``meta`` (date, machine load before and after, the command, durations, seed).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from loadtests.peers import plots
from loadtests.peers.tables import (
    bursty_table,
    cancel_table,
    check_targets,
    checks_table,
    compact_bursty,
    compact_cancel,
    compact_overhead,
    overhead_table,
    prefix_table,
)


@dataclass
class Results:
    overhead: list[dict[str, Any]] = field(default_factory=list)
    bursty: list[dict[str, Any]] = field(default_factory=list)
    prefix: list[dict[str, Any]] = field(default_factory=list)
    cancel: list[dict[str, Any]] = field(default_factory=list)
    notes: dict[str, dict[str, str]] = field(default_factory=dict)  # scenario -> target -> text
    failures: dict[str, str] = field(default_factory=dict)  # "scenario/target" -> why


# What each peer could not do here, as configured and observed on this bench.
LIMITS = (
    "None of the peers routes by difficulty or length class, and none estimates queueing "
    "time; the bursty fleet has one pool, so our gateway does not use tier routing there "
    "either.",
    "LiteLLM: no shedding (nothing refuses work at a cap), no prefix-aware replica choice; "
    "`least-busy` routing for the bursty load, `simple-shuffle` otherwise. A client that "
    "leaves while a whole (non-streamed) answer is being made was not passed on within the "
    "bound.",
    "vllm-router: `--max-concurrent-requests` frees a request's slot once the response head "
    "is sent (checked with a limit of 1: a second stream was admitted while the first still "
    "streamed), so running streams never count and its cap did not engage; it notices a "
    "client that left before the first token only when that token arrives.",
    "nginx: no queue and no prefix awareness; `limit_conn` refuses at once beyond the cap "
    "(429), without priorities or a wait estimate.",
    "Errors of LiteLLM and nginx under load (`Server disconnected`, `Connection closed`; "
    "502 after `Connection reset by peer`) came from replicas closing an idle keep-alive "
    "connection just as the proxy reused it; our gateway sends such a request again when "
    "no byte of the answer had come.",
)


def _section(title: str, intro: str, table: str, image: str | None) -> list[str]:
    out = [f"## {title}", "", intro, "", table, ""]
    if image:
        out += [f"![{title}]({image})", ""]
    return out


def render(results: Results, meta: Mapping[str, Any]) -> str:
    lines = ["# Peer gateways side by side", ""]
    lines += [f"- {k}: {v}" for k, v in meta.items()]
    lines.append("")
    checks = check_targets(results.overhead, results.bursty)
    lines += ["## Targets (issue 12)", "", checks_table(checks), ""]
    lines += ["## What the peers cannot do", "", *(f"- {text}" for text in LIMITS), ""]
    if results.failures:
        lines += ["## Runs that did not start", ""]
        lines += [f"- {where}: {why}" for where, why in results.failures.items()] + [""]
    if results.overhead:
        lines += _section(
            "Overhead",
            "Fake upstream (20 ms to the first token, then 20 tokens 5 ms apart); closed-loop "
            "streaming clients; rounds alternate between targets. Max req/s: the same clients "
            "with the fake answering at once.",
            overhead_table(results.overhead),
            "overhead.png",
        )
    if results.bursty:
        lines += _section(
            "Bursty mixed-length load",
            "Two simulated Llama-3.1-8B replicas (capacity about 16 req/s), on/off bursts of "
            "short, long-context and sheddable requests; 3x: bursts at 48 req/s, 1x: at 16. "
            "Admitted TTFT: over requests that succeeded. Goodput: within the 2 s TTFT SLO.",
            bursty_table(results.bursty, results.notes.get("bursty", {})),
            "bursty.png",
        )
        loads = dict.fromkeys(str(r["load"]) for r in results.bursty)
        lines += [f"![TTFT CDF at {load}](bursty-{load}-ttft-cdf.png)" for load in loads] + [""]
    if results.prefix:
        lines += _section(
            "Shared-prefix multi-tenant chat",
            "Four L4-sized replicas, 40 tenants with ~2k-token system prompts (twice one "
            "replica's KV cache); hit rate: the replicas' prefix-cache hits / queries.",
            prefix_table(results.prefix, results.notes.get("prefix", {})),
            "prefix.png",
        )
    if results.cancel:
        lines += _section(
            "Cancellation",
            "Client closes its socket; time until the fake upstream saw it, per phase. "
            "Not detected within the bound counts as a miss (the trial then waits for the "
            "late cancel).",
            cancel_table(results.cancel),
            "cancel.png",
        )
    return "\n".join(lines)


def render_compact(results: Results, meta: Mapping[str, Any]) -> str:
    """The short form for the README: one row per target and suite."""
    lines = [f"{meta.get('started (UTC)', '?')} UTC; {meta.get('machine', '')}", ""]
    lines += [checks_table(check_targets(results.overhead, results.bursty)), ""]
    if results.overhead:
        lines += [compact_overhead(results.overhead), ""]
    if results.bursty:
        lines += [compact_bursty(results.bursty), ""]
    if results.prefix:
        lines += [prefix_table(results.prefix, results.notes.get("prefix", {})), ""]
    if results.cancel:
        lines += [compact_cancel(results.cancel), ""]
    return "\n".join(lines)


def write(out: Path, results: Results, meta: Mapping[str, Any]) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    if results.overhead:
        plots.plot_overhead(results.overhead, out / "overhead.png")
    if results.bursty:
        plots.plot_bursty(results.bursty, out / "bursty.png")
    if results.prefix:
        plots.plot_prefix(results.prefix, out / "prefix.png")
    if results.cancel:
        plots.plot_cancel(results.cancel, out / "cancel.png")
    cancel = [{k: v for k, v in r.items() if k != "delays_ms"} for r in results.cancel]
    data = {**asdict(results), "cancel": cancel, "meta": dict(meta)}
    (out / "summary.json").write_text(json.dumps(data, indent=2, default=str))
    (out / "summary.md").write_text(render_compact(results, meta))
    path = out / "report.md"
    path.write_text(render(results, meta))
    return path
