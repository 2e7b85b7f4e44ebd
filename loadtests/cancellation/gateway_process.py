"""The gateway as a real subprocess in front of one upstream, and its cancellation counts.

``gateway_process`` writes a one-backend policy (pool ``main``, public model ``bench``;
``queued``: ``max_inflight: 1`` and timeouts long enough for the holder) and runs
``python -m gateway serve`` until the block ends; its log is shown if start-up fails.
``cancellation_counts`` reads ``gateway_cancellations_total`` per phase from ``/metrics``.
"""

from __future__ import annotations

import json
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from gateway.children import running
from loadtests.cancellation.upstreams import Target
from loadtests.kit.ports import free_port


@contextmanager
def gateway_process(
    target: Target, tmp: Path, *, queued: bool = False
) -> Iterator[tuple[str, int]]:
    """The gateway in front of ``target``; ``queued``: the pool's limit is 1, and timeouts
    long enough for the holder (a whole answer of ~68 s, a stream of days)."""
    port = free_port()
    kind = "queued" if queued else "main"
    policy = tmp / f"policy-{target.name}-{kind}.yaml"
    pools = "pools:\n  main:\n    timeouts: {first_token_s: 86400, idle_s: 86400, total_s: 86400}\n"
    policy.write_text(
        "backends:\n"
        f"  - {{name: up-0, url: {json.dumps(target.url)}, engine: vllm,"
        f" model: {json.dumps(target.model)}, pool: main,"
        f" max_inflight: {1 if queued else 1000}}}\n"
        "models:\n  bench: {pool: main}\n" + (pools if queued else "")
    )
    argv = [sys.executable, "-m", "gateway", "serve", "--policy", str(policy),
            "--port", str(port), "--log-level", "warning"]  # fmt: skip
    log_path = tmp / f"gateway-{target.name}-{kind}.log"
    try:
        with running(argv, [f"http://127.0.0.1:{port}/readyz"], log_path):
            yield "127.0.0.1", port
    except Exception:
        if log_path.exists():
            sys.stderr.write(f"--- {log_path} ---\n{log_path.read_text()[-4000:]}\n")
        raise


def cancellation_counts(gateway: tuple[str, int]) -> dict[str, int]:
    host, port = gateway
    with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=5) as resp:
        text = resp.read().decode()
    counts: dict[str, int] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "gateway_cancellations_total":
                counts[sample.labels["phase"]] = int(sample.value)
    return counts
