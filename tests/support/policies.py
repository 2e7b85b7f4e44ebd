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


# Two pools whose served models state their sizes, route: auto and a fixed model, no tier
# rules: what a newcomer writes, and what the difficulty split applies to.
SMALL_LARGE = """
backends:
  - {name: s0, url: "http://127.0.0.1:1", model: Qwen/Qwen2.5-1.5B-Instruct, pool: small}
  - {name: l0, url: "http://127.0.0.1:2", model: meta-llama/Llama-3.1-70B-Instruct, pool: large}
models:
  auto: {route: auto}
  fixed: {pool: small}
"""
