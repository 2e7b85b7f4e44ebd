"""classify.model.embedding: the learned difficulty model's embedding part routes route: auto
through a real gateway with the real embedding model, on the one embedding the cache stage
makes per request."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx2 as httpx
import openai
import pytest

from gateway.app import build_app
from gateway.policy import load_policy_text
from gateway.runtime.parts import Gateway
from loadtests.kit.fake_upstream import FakeConfig, build_fake
from loadtests.kit.serving import Served, serve, serve_app

POLICY = """
backends:
  - {{name: s0, url: "{small}", model: Qwen/Qwen2.5-1.5B-Instruct, pool: small}}
  - {{name: l0, url: "{large}", model: meta-llama/Llama-3.1-70B-Instruct, pool: large}}
models:
  auto: {{route: auto}}
classify:
  model: {{embedding: true}}  # the text model's embedding part scores
cache:
  enabled: true
  semantic: {{embed_timeout_s: 60}}  # a busy test machine must not skip the embedding
"""
CODE_BUG = (
    "Here is a Python function that should return the median of a list. Find the bug: "
    "def median(xs): xs.sort(); return xs[len(xs)//2]"
)
POEM = "Write a short poem about the sea."


@pytest.fixture
def routed() -> Iterator[tuple[Served, Gateway]]:
    config = FakeConfig(ttft_s=0.001, tokens=2, itl_s=0.0, finish_reason="stop")
    with serve(build_fake(config)) as small, serve(build_fake(config)) as large:
        app = build_app(load_policy_text(POLICY.format(small=small, large=large)))
        gateway: Gateway = app.state.gateway
        with serve_app(app) as served:
            assert served.call(gateway.caches.ready, timeout=120)
            yield served, gateway


def _ask(served: Served, text: str, temperature: float) -> tuple[str, str, str]:
    sdk = openai.OpenAI(base_url=served.url + "/v1", api_key="k", max_retries=0, timeout=60)
    raw = sdk.chat.completions.with_raw_response.create(
        model="auto",
        messages=[{"role": "user", "content": text}],
        max_tokens=2,
        temperature=temperature,
    )
    headers = raw.headers
    return headers["x-gateway-pool"], headers["x-gateway-route-reason"], headers["x-gateway-cache"]


def _embedded(served: Served) -> float:
    metrics = httpx.get(served.url + "/metrics").text
    found = re.search(r"^gateway_embedding_batch_size_sum (\S+)$", metrics, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def test_one_embedding_per_request_serves_the_cache_and_the_routing(
    routed: tuple[Served, Gateway],
) -> None:
    served, _ = routed
    before = _embedded(served)
    hard = _ask(served, CODE_BUG, temperature=0)  # cacheable: the cache lookup embeds it
    easy = _ask(served, POEM, temperature=0)
    assert (hard[0], hard[2]) == ("large", "miss")
    assert (easy[0], easy[2]) == ("small", "miss")
    assert hard[1].startswith("auto:large>=0.70;")
    assert hard[1].endswith(";by=model+embedding")
    assert easy[1].startswith("auto:small<0.70;")
    assert easy[1].endswith(";by=model+embedding")
    assert _embedded(served) - before == 2  # not 4: routing reused the cache's vectors
    # Not cacheable (temperature 0.7): the cache bypasses, and routing embeds it once.
    bypassed = _ask(served, CODE_BUG + " Explain briefly.", temperature=0.7)
    assert bypassed[2] == "bypass"
    assert bypassed[1].endswith(";by=model+embedding")
    assert _embedded(served) - before == 3
