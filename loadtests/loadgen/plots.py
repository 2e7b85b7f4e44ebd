"""PNG plots of a run: the TTFT CDF, and latency plus in-flight/queue depth over time.

matplotlib is imported lazily with the Agg backend so the load generator itself never pays
for it and no display is needed. Call only after the run (it is CPU work).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from loadtests.loadgen.record import RequestRecord
from loadtests.loadgen.sampler import Sample
from loadtests.loadgen.timeline import in_flight_steps


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_ttft_cdf(runs: Mapping[str, Sequence[RequestRecord]], path: Path) -> None:
    """One CDF curve of successful requests' TTFT per named run."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, records in runs.items():
        ttft = sorted(r.ttft_s * 1000 for r in records if r.ok and r.ttft_s is not None)
        if ttft:
            ys = [(i + 1) / len(ttft) for i in range(len(ttft))]
            ax.step(ttft, ys, where="post", label=f"{name} (n={len(ttft)})")
    ax.set_xlabel("TTFT (ms)")
    ax.set_ylabel("fraction of requests")
    ax.set_ylim(0, 1.01)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_timeline(records: Sequence[RequestRecord], samples: Sequence[Sample], path: Path) -> None:
    """Top: TTFT and E2E of each request at its send time; bottom: in-flight and gauges."""
    plt = _pyplot()
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
    ok = [r for r in records if r.ok]
    top.scatter([r.sent_s for r in ok], [(r.e2e_s or 0) * 1000 for r in ok], s=6, label="E2E")
    top.scatter([r.sent_s for r in ok], [(r.ttft_s or 0) * 1000 for r in ok], s=6, label="TTFT")
    failed = [r for r in records if not r.ok]
    top.scatter([r.sent_s for r in failed], [0] * len(failed), s=10, marker="x", label="failed")
    top.set_ylabel("latency (ms)")
    top.legend(loc="upper left")
    top.grid(alpha=0.3)
    steps = in_flight_steps(records)
    bottom.step([t for t, _ in steps], [n for _, n in steps], where="post", label="in flight")
    for (url, gauge), points in _series(samples).items():
        bottom.plot([t for t, _ in points], [v for _, v in points], label=f"{gauge} @ {url}")
    bottom.set_xlabel("time since start (s)")
    bottom.set_ylabel("requests")
    bottom.legend(loc="upper left", fontsize="small")
    bottom.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _series(samples: Sequence[Sample]) -> dict[tuple[str, str], list[tuple[float, float]]]:
    out: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for s in samples:
        out.setdefault((s.url, s.gauge), []).append((s.t_s, s.value))
    return out
