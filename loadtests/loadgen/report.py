"""Writes a run's artefacts: records (JSONL), summary (JSON), report (Markdown), plots (PNG)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import orjson

from loadtests.loadgen.plots import plot_timeline, plot_ttft_cdf
from loadtests.loadgen.record import RequestRecord
from loadtests.loadgen.sampler import Sample

LATENCY_ROWS = ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms", "lateness_ms")


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1 else f"{value:.1f}"
    return str(value)


def markdown_summary(summary: Mapping[str, Any], meta: Mapping[str, Any]) -> str:
    """A human-readable report of one run."""
    lines = [f"# Load test: {meta.get('workload', '?')}", ""]
    lines += [f"- {k}: `{v}`" for k, v in meta.items()]
    lines += ["", "## Latency (successful requests)", ""]
    lines += ["| metric | p50 | p95 | p99 | mean | n |", "|---|---|---|---|---|---|"]
    for row in LATENCY_ROWS:
        t = summary[row]
        cells = [t["p50"], t["p95"], t["p99"], t["mean"], int(t["count"] or 0)]
        lines.append(f"| {row} | " + " | ".join(_fmt(c) for c in cells) + " |")
    lines += ["", "## Rates", "", "| metric | value |", "|---|---|"]
    for key in (
        "requests",
        "succeeded",
        "span_s",
        "goodput_rps",
        "slo_attainment",
        "throughput_rps",
        "output_tokens_per_s",
        "shed_rate",
        "error_rate",
    ):
        lines.append(f"| {key} | {_fmt(summary[key])} |")
    lines += ["", f"SLO: `{summary['slo']}`; errors: `{summary['errors']}`;"]
    lines += [f"statuses: `{summary['statuses']}`", ""]
    lines += _label_table(summary.get("by_label", {}))
    return "\n".join(lines) + "\n"


def _label_table(by_label: Mapping[str, Any]) -> list[str]:
    if not by_label:
        return []
    lines = ["## By request class", ""]
    lines += ["| class | n | TTFT p50 | TTFT p99 | TPOT p50 | E2E p99 | goodput/s | shed | err |"]
    lines += ["|---|---|---|---|---|---|---|---|---|"]
    for label, s in by_label.items():
        cells = [
            s["requests"],
            s["ttft_ms"]["p50"],
            s["ttft_ms"]["p99"],
            s["tpot_ms"]["p50"],
            s["e2e_ms"]["p99"],
            s["goodput_rps"],
            s["shed_rate"],
            s["error_rate"],
        ]
        lines.append(f"| {label} | " + " | ".join(_fmt(c) for c in cells) + " |")
    return [*lines, ""]


def write_jsonl(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))


def write_json(path: Path, data: Any) -> None:
    path.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))


def write_run_report(
    out_dir: Path,
    records: Sequence[RequestRecord],
    samples: Sequence[Sample],
    summary: Mapping[str, Any],
    meta: Mapping[str, Any],
    *,
    plots: bool = True,
) -> list[Path]:
    """Write every artefact of one run into ``out_dir``; returns the paths written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / n for n in ("records.jsonl", "samples.jsonl", "summary.json", "report.md")]
    write_jsonl(paths[0], [r.to_dict() for r in records])
    write_jsonl(paths[1], [asdict(s) for s in samples])
    write_json(paths[2], {"meta": dict(meta), "summary": dict(summary)})
    paths[3].write_text(markdown_summary(summary, meta))
    if plots:
        paths += [out_dir / "ttft_cdf.png", out_dir / "timeline.png"]
        plot_ttft_cdf({str(meta.get("mode", "run")): records}, paths[4])
        plot_timeline(records, samples, paths[5])
    return paths


def read_records(path: Path) -> list[RequestRecord]:
    return [
        RequestRecord.from_dict(orjson.loads(line))
        for line in path.read_bytes().splitlines()
        if line.strip()
    ]
