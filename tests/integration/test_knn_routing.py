"""classify.knn: the kNN vote over embedded exemplars steers auto routing (real model)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from gateway.app import build_app
from gateway.policy import load_policy_text
from gateway.runtime.parts import Gateway
from loadtests.kit.fake_upstream import FakeConfig, build_fake
from loadtests.kit.serving import Served, serve, serve_app

EXEMPLARS = [
    ("Prove that there are infinitely many prime numbers.", "hard"),
    ("Derive the closed form of the sum of the first n squares and prove it by induction.", "hard"),
    ("What is the capital of France?", "easy"),
    ("Say hello in Spanish.", "easy"),
]


@pytest.fixture
def routed(tmp_path: Path) -> Iterator[tuple[Served, Gateway]]:
    exemplars = tmp_path / "exemplars.jsonl"
    exemplars.write_text(
        "".join(json.dumps({"prompt": p, "label": la}) + "\n" for p, la in EXEMPLARS)
    )
    config = FakeConfig(ttft_s=0.001, tokens=2, itl_s=0.0)
    with serve(build_fake(config)) as small, serve(build_fake(config)) as large:
        policy = f"""
backends:
  - {{name: s0, url: "{small}", model: m, pool: small}}
  - {{name: l0, url: "{large}", model: m, pool: large}}
models:
  auto: {{route: auto}}
routing:
  default_pool: small
  rules:
    - {{name: hard-to-large, when: {{difficulty_at_least: 0.5}}, pool: large}}
classify:
  knn: {{enabled: true, exemplars: "{exemplars}", k: 1, weight: 1.0}}
  model: {{enabled: false}}  # the vote blends into the heuristic's score
cache:
  semantic: {{embed_timeout_s: 60}}  # a busy test machine must not skip the embedding
"""
        app = build_app(load_policy_text(policy))
        gateway: Gateway = app.state.gateway
        with serve_app(app) as served:
            assert served.call(gateway.caches.ready, timeout=120)
            assert gateway.caches.knn is not None
            yield served, gateway


def _pool(served: Served, text: str) -> str:
    sdk = openai.OpenAI(base_url=served.url + "/v1", api_key="k", max_retries=0, timeout=30)
    raw = sdk.chat.completions.with_raw_response.create(
        model="auto", messages=[{"role": "user", "content": text}], max_tokens=2
    )
    return raw.headers["x-gateway-pool"]


def test_the_vote_of_the_nearest_exemplar_routes(routed: tuple[Served, Gateway]) -> None:
    served, _ = routed
    assert _pool(served, "Prove that infinitely many primes exist.") == "large"
    assert _pool(served, "What's the capital city of France?") == "small"
