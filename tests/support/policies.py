"""Small policies for tests, written as YAML text the way users write them."""

from __future__ import annotations


def single_pool(
    url: str, *, served: str = "fake-model", extra: str = "", inflight: int = 32
) -> str:
    return f"""
backends:
  - name: small-0
    url: {url}
    engine: vllm
    model: {served}
    pool: small
    max_inflight: {inflight}
models:
  fast: {{pool: small}}
  auto: {{route: auto}}
{extra}
"""
