"""The gateway learns how its backends count prompt tokens from their ``usage``: its
admission then weighs a prompt as the engine will count it, not as four characters a token."""

from __future__ import annotations

import httpx2 as httpx
import openai

from gateway.app import build_app
from gateway.policy import load_policy_text
from tests.support.policies import single_pool
from tests.support.servers import serve


def test_admission_counts_prompt_tokens_as_the_backend_does(upstream: str) -> None:
    # The fake upstream counts 5 prompt tokens for any prompt.
    app = build_app(load_policy_text(single_pool(upstream)))
    with serve(app) as url:
        client = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0, timeout=10)
        gateway = app.state.gateway
        assert gateway.prompt_tokens("small", 2000) == 500  # before any usage: the prior
        for size in (200, 2000) * 20:
            client.chat.completions.create(
                model="fast", messages=[{"role": "user", "content": "x" * size}]
            )
        streamed = client.chat.completions.create(
            model="fast",
            messages=[{"role": "user", "content": "y" * 2000}],
            stream=True,
            stream_options={"include_usage": True},
        )
        assert [c for c in streamed if c.usage is not None]
        backend = gateway.backends.get("small-0")
        assert backend is not None
        assert backend.token_count.observed == 41
        # Far below 500: as low as an estimate may go (one token per 16 characters), with
        # the prior still weighing a little.
        assert 2000 / 16 <= gateway.prompt_tokens("small", 2000) < 150
        metrics = httpx.get(url + "/metrics").text
        line = next(m for m in metrics.splitlines() if m.startswith("gateway_backend_chars_per"))
        assert 'backend="small-0"' in line
        assert float(line.split()[-1]) == backend.token_count.chars_per_token > 4
