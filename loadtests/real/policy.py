"""The gateway policy in front of one real server: backend ``real-0`` in pool ``cpu``, public
model ``gemma``, no TTFT objective (the suites and the predictor check test relaying,
cancellation and prediction, not shedding). Parameters: how many requests the pool admits
at once (``inflight``) and queues (``max_queue``), how often the server's load is scraped
(``scrape_s``; llama.cpp needs 2 s or more, see docs/real-backends.md), and whether the
access log is on."""

from __future__ import annotations

from loadtests.real.model import SERVED_NAME


def real_policy(
    url: str,
    engine: str,
    *,
    inflight: int = 4,
    max_queue: int = 16,
    scrape_s: float = 0.2,
    access_log: bool = False,
) -> str:
    return f"""
backends:
  - name: real-0
    url: {url}
    engine: {engine}
    model: {SERVED_NAME}
    pool: cpu
    max_inflight: {inflight}
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
