"""PNG plots of the peer comparison (matplotlib, Agg, imported only when plotting).

- ``overhead.png``: TTFT p50 and p99 ratio to direct against concurrency, one line per target,
  and the most requests/s per target and concurrency (log scale);
- ``bursty.png``: admitted p99 TTFT and goodput per target at each load;
- ``prefix.png``: prefix-cache hit rate and TTFT p50 per target;
- ``cancel.png``: p50 time until the upstream closed, per target and phase (log scale);
  phases a target cannot be in, or trials it never noticed within the bound, have no bar.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from loadtests.loadgen.plots import _pyplot

Row = Mapping[str, Any]


def _targets(rows: Sequence[Row]) -> list[str]:
    return list(dict.fromkeys(str(r["target"]) for r in rows))


def plot_overhead(rows: Sequence[Row], path: Path) -> None:
    plt = _pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    levels = sorted({int(r["concurrency"]) for r in rows})
    names = _targets(rows)
    for name in names:
        mine = sorted((r for r in rows if r["target"] == name and "p50_ratio" in r),
                      key=lambda r: r["concurrency"])  # fmt: skip
        if mine:
            xs = [r["concurrency"] for r in mine]
            line = left.plot(xs, [r["p50_ratio"] for r in mine], marker="o", label=f"{name} p50")
            left.plot(xs, [r["p99_ratio"] for r in mine], marker="x", linestyle="--",
                      color=line[0].get_color(), label=f"{name} p99")  # fmt: skip
    left.set_xscale("log", base=2)
    left.set_xticks(levels, [str(c) for c in levels])
    left.set_yscale("log")
    left.set_xlabel("concurrency")
    left.set_ylabel("TTFT / direct TTFT")
    left.grid(alpha=0.3)
    left.legend(fontsize="small")
    width = 0.8 / max(1, len(names))
    for i, name in enumerate(names):
        values = [next((r["max_rps"] or 0 for r in rows if r["target"] == name
                        and r["concurrency"] == c), 0) for c in levels]  # fmt: skip
        right.bar([j + i * width for j in range(len(levels))], values, width, label=name)
    right.set_xticks([j + 0.4 - width / 2 for j in range(len(levels))], [str(c) for c in levels])
    right.set_yscale("log")
    right.set_xlabel("concurrency")
    right.set_ylabel("max requests/s (zero-delay fake)")
    right.grid(alpha=0.3, axis="y")
    right.legend(fontsize="small")
    _save(plt, fig, path)


def _bars(ax: Any, rows: Sequence[Row], key: str, groups: list[str], group_key: str) -> None:
    names = _targets(rows)
    width = 0.8 / max(1, len(names))
    for i, name in enumerate(names):
        values = [next((r[key] or 0 for r in rows if r["target"] == name
                        and r[group_key] == g), 0) for g in groups]  # fmt: skip
        ax.bar([j + i * width for j in range(len(groups))], values, width, label=name)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(groups))], groups)
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize="small")


def plot_bursty(rows: Sequence[Row], path: Path) -> None:
    plt = _pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    loads = list(dict.fromkeys(str(r["load"]) for r in rows))
    _bars(left, rows, "ttft_p99_ms", loads, "load")
    left.set_yscale("log")  # LiteLLM is orders of magnitude above the rest
    left.set_ylabel("admitted TTFT p99 (ms)")
    left.set_xlabel("load (x capacity)")
    _bars(right, rows, "goodput_rps", loads, "load")
    right.set_ylabel("goodput (req/s within the SLO)")
    right.set_xlabel("load (x capacity)")
    _save(plt, fig, path)


def plot_prefix(rows: Sequence[Row], path: Path) -> None:
    plt = _pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    names = _targets(rows)
    left.bar(names, [100 * (r["prefix_hit_rate"] or 0) for r in rows])
    left.set_ylabel("prefix-cache hit rate (%)")
    right.bar(names, [r["ttft_p50_ms"] or 0 for r in rows])
    right.set_ylabel("TTFT p50 (ms)")
    for ax in (left, right):
        ax.grid(alpha=0.3, axis="y")
        ax.tick_params(axis="x", labelrotation=20)
    _save(plt, fig, path)


def plot_cancel(rows: Sequence[Row], path: Path) -> None:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(10, 4.5))
    phases = list(dict.fromkeys(str(r["phase"]) for r in rows))
    _bars(ax, [{**r, "p50_ms": r.get("p50_ms")} for r in rows], "p50_ms", phases, "phase")
    ax.set_yscale("log")
    ax.set_ylabel("p50 ms until the upstream saw the client leave")
    _save(plt, fig, path)


def _save(plt: Any, fig: Any, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
