"""The gateway policy in front of real servers: backends ``real-0``, ``real-1``, ... (one per
URL, all of one engine) in pool ``cpu``, public model ``gemma``, no TTFT objective (the
suites and the predictor check test relaying, cancellation, prediction and continuation,
not shedding). Parameters: how many requests the pool admits at once per backend
(``inflight``) and queues (``max_queue``), how often the servers' load is scraped
(``scrape_s``; llama.cpp needs 2 s or more, see docs/real-backends.md), and whether the
access log is on."""

from __future__ import annotations

from collections.abc import Sequence

from loadtests.real.model import SERVED_NAME


def real_policy(
    urls: str | Sequence[str],
    engine: str,
    *,
    inflight: int = 4,
    max_queue: int = 16,
    scrape_s: float = 0.2,
    access_log: bool = False,
) -> str:
    backends = "".join(
        f"""
  - name: real-{i}
    url: {url}
    engine: {engine}
    model: {SERVED_NAME}
    pool: cpu
    max_inflight: {inflight}"""
        for i, url in enumerate([urls] if isinstance(urls, str) else urls)
    )
    return f"""
backends:{backends}
models:
  gemma: {{pool: cpu}}
pools:
  cpu:
    timeouts: {{connect_s: 5, first_token_s: 120, idle_s: 60, total_s: 300}}
    retry: {{attempts: 1}}
    admission:
      max_queue: {max_queue}
      objective: null
health: {{interval_s: 2, timeout_s: 5, scrape_interval_s: {scrape_s}}}
server: {{access_log: {str(access_log).lower()}}}
"""
