"""``python -m loadtests.metric_updates``: the CPU instructions of one request's metric updates
and of its access-log line's redaction, as the gateway makes them, counted by callgrind: the
share of the per-request figure of ``loadtests.request_instructions`` that these cuts touch,
resolved below that benchmark's noise (about 1.5% of 2.7 M instructions).

Each case runs twice in a child ``python -P`` under ``valgrind --tool=callgrind`` (this
checkout on ``PYTHONPATH``), once with 0 and once with ``--updates`` repetitions; the
difference of the two counts over the repetitions is the figure (start-up and imports
cancel). Cases:

- ``metrics``: a streamed request's updates that end 200 (``admitted`` and ``requests``
  counted; ``ttft_predicted``, ``queue_wait``, ``prefix_match``, ``overhead``,
  ``ttft_prediction_error``, ``e2e``, ``ttft`` and ``tpot`` observed; ``inflight`` up and
  down), each through its ``labels`` as the stages do, with a policy's label sets in use (so
  ``Bounded`` keeps the children): on the ``GatewayMetrics`` the gateway makes (``loop``), on
  the same built with prometheus_client's own classes in place of the loop instruments
  (``prometheus_client``), and on that with TPOT and queue wait labelled through
  prometheus_client's ``labels`` each time (``main``: as before, where they were not
  ``Bounded``).
- ``redaction``: a line's outside-text fields (``model``, ``error``) through
  ``Redactor.fields`` (``kept``: the cleaned form of a value kept) or cleaned on every line
  (``scanned``: ``Redactor.clipped`` on each, the code before).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path
from unittest import mock

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from gateway.metrics import GatewayMetrics
from gateway.security.redact import MAX_FIELD, Redactor

CHECKOUT = Path(__file__).resolve().parents[2]
CASES = {"metrics": ("main", "prometheus_client", "loop"), "redaction": ("scanned", "kept")}


def _metrics(variant: str) -> GatewayMetrics:
    """The instruments, with a policy's label sets (its values are kept children)."""
    if variant == "loop":
        metrics = GatewayMetrics(CollectorRegistry())  # as the gateway makes it
    else:
        with mock.patch.multiple(
            "gateway.metrics", LoopCounter=Counter, LoopHistogram=Histogram, LoopGauge=Gauge
        ):
            metrics = GatewayMetrics(CollectorRegistry())
    metrics.bounds.use(models=["fast"], tenants=[], pools=["small"], backends=["small-0"])
    return metrics


def _request_updates(m: GatewayMetrics, times: int, main: bool) -> None:
    """What a streamed request ending 200 updates, by the stages' calls (``main``: TPOT and
    queue wait labelled by prometheus_client, without kept children, as there)."""
    pool, length, cache = "small", "short", "bypass"
    tpot = m.tpot.metric if main else m.tpot
    queue_wait = m.queue_wait.metric if main else m.queue_wait
    for _ in range(times):
        m.admitted.labels(pool).inc()
        m.ttft_predicted.labels(pool).observe(0.08)
        queue_wait.labels(pool).observe(0.0)
        m.prefix_match.labels(pool).observe(0.0)
        m.overhead.observe(0.0004)
        m.inflight.labels(pool).inc()
        m.ttft_prediction_error.labels(pool, "under").observe(0.01)
        m.inflight.labels(pool).dec()
        m.requests.labels("fast", pool, "small-0", "200", cache).inc()
        m.e2e.labels(pool, length, cache).observe(0.35)
        m.ttft.labels(pool, length, cache).observe(0.09)
        tpot.labels(pool, length).observe(0.012)


def _redactions(variant: str, times: int) -> None:
    redactor = Redactor(["cfg-secret-Zq81mWx4"])
    line = {"id": "3f2a1c4e", "model": "fast", "pool": "small", "status": 200, "error": None}
    keys = ("model", "error")
    for _ in range(times):
        if variant == "kept":
            redactor.fields(line, keys)
        else:
            out = dict(line)
            for key in keys:
                value = out.get(key)
                if isinstance(value, str):
                    out[key] = redactor.clipped(value, MAX_FIELD)


def inner(case: str, variant: str, times: int) -> None:
    if case == "metrics":
        _request_updates(_metrics(variant), times, main=variant == "main")
    else:
        _redactions(variant, times)


def _counted(case: str, variant: str, times: int, folder: Path) -> int:
    out = folder / f"callgrind.{case}.{variant}.{times}"
    argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, "-P",
            "-m", "loadtests.metric_updates", "--inner", case, variant, str(times)]  # fmt: skip
    env = {"PYTHONPATH": str(CHECKOUT)}
    subprocess.run(argv, check=True, capture_output=True, env=env)
    for line in out.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("summary:") or line.startswith("totals:"):
            return int(line.split()[1])
    raise ValueError(f"no summary in {out}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m loadtests.metric_updates",
                                     description=__doc__.split("\n\n")[0])  # fmt: skip
    parser.add_argument("--updates", type=int, default=2000, help="repetitions counted")
    parser.add_argument("--inner", nargs=3, metavar=("CASE", "VARIANT", "TIMES"))
    args = parser.parse_args(argv)
    if args.inner is not None:
        case, variant, times = args.inner
        inner(case, variant, int(times))
        return 0
    with tempfile.TemporaryDirectory(prefix="metric-updates-") as tmp:
        for case, variants in CASES.items():
            figures = []
            for variant in variants:
                base = _counted(case, variant, 0, Path(tmp))
                full = _counted(case, variant, args.updates, Path(tmp))
                per = (full - base) / args.updates
                figures.append(per)
                print(f"{case} {variant}: {per:,.0f} instructions per request", flush=True)
            for variant, figure in zip(variants[1:], figures[1:], strict=True):
                print(f"{case} {variant}: {figures[0] - figure:,.0f} fewer than {variants[0]}")
    return 0
