"""Gateway-versus-direct comparison: the ratio table and its JSON/Markdown report.

Every ratio is ``gateway / direct`` of the same metric from the two run summaries; for
latencies and error rate lower is better (< 1 means the gateway helped), for goodput and
throughput higher is better. A ratio is ``None`` when the direct value is missing or both
are zero, ``inf`` when only the direct value is zero.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from loadtests.loadgen.report import write_json
from loadtests.loadgen.stats import ratio

# (row name, summary key, percentile key or None, True when lower is better)
RATIO_ROWS: tuple[tuple[str, str, str | None, bool], ...] = (
    ("TTFT p50", "ttft_ms", "p50", True),
    ("TTFT p99", "ttft_ms", "p99", True),
    ("TPOT p50", "tpot_ms", "p50", True),
    ("TPOT p99", "tpot_ms", "p99", True),
    ("E2E p99", "e2e_ms", "p99", True),
    ("goodput", "goodput_rps", None, False),
    ("throughput", "throughput_rps", None, False),
    ("error rate", "error_rate", None, True),
    ("shed rate", "shed_rate", None, True),
)


def _value(summary: Mapping[str, Any], key: str, pct: str | None) -> float | None:
    value = summary.get(key)
    if pct is not None:
        value = value.get(pct) if isinstance(value, Mapping) else None
    return float(value) if isinstance(value, int | float) else None


def ratio_rows(direct: Mapping[str, Any], gateway: Mapping[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for name, key, pct, lower_better in RATIO_ROWS:
        d, g = _value(direct, key, pct), _value(gateway, key, pct)
        rows.append(
            {
                "metric": name,
                "direct": d,
                "gateway": g,
                "ratio": ratio(g, d),
                "lower_is_better": lower_better,
            }
        )
    return rows


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}"


def ratio_table(rows: list[dict[str, Any]]) -> str:
    """A Markdown table (also readable as plain text on a terminal)."""
    lines = [
        "| metric | direct | gateway | gateway/direct | better |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        better = "lower" if row["lower_is_better"] else "higher"
        cells = [row["metric"], _fmt(row["direct"]), _fmt(row["gateway"]), _fmt(row["ratio"])]
        lines.append("| " + " | ".join([*cells, better]) + " |")
    return "\n".join(lines)


def write_comparison(
    out_dir: Path,
    rows: list[dict[str, Any]],
    meta: Mapping[str, Any],
    summaries: Mapping[str, Mapping[str, Any]],
) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out_dir / "comparison.json", out_dir / "comparison.md"
    write_json(json_path, {"meta": dict(meta), "ratios": rows, "summaries": dict(summaries)})
    header = [f"# Gateway vs direct: {meta.get('workload', '?')}", ""]
    header += [f"- {k}: `{v}`" for k, v in meta.items()]
    md_path.write_text("\n".join([*header, "", ratio_table(rows), ""]))
    return [json_path, md_path]
