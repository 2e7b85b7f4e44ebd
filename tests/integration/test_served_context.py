"""The gateway reads each backend's served context length from ``/v1/models`` (vLLM's
``max_model_len``) before it serves, and refuses at once, with ``context_length_exceeded``,
a prompt too long for a pool whose policy sets no ``max_context``; a ``max_context`` in the
policy still wins, and a reload keeps what was learned."""

from __future__ import annotations

from pathlib import Path

import httpx2 as httpx

from gateway.app import build_app
from gateway.policy import load_policy_file, load_policy_text
from tests.support.policies import single_pool
from tests.support.servers import serve
from tests.support.sim_replica import SERVED, sim_replica

LONG = "lorem ipsum dolor sit amet " * 8_000  # ~48k tokens; the replica serves 32,768


def _chat(content: str) -> dict[str, object]:
    return {"model": "fast", "messages": [{"role": "user", "content": content}], "max_tokens": 4}


def test_a_prompt_longer_than_the_served_context_is_refused_at_the_gateway(
    tmp_path: Path,
) -> None:
    with sim_replica(speed=50) as replica:
        path = tmp_path / "policy.yaml"
        path.write_text(single_pool(replica.url, served=SERVED))
        app = build_app(load_policy_file(path), policy_path=path)
        with serve(app) as url, httpx.Client(base_url=url, timeout=30) as http:
            pool = app.state.gateway.policy.pools["small"]
            assert pool.settings.max_context == 32_768  # learned before serving
            refused = http.post("/v1/chat/completions", json=_chat(LONG))
            served = http.post("/v1/chat/completions", json=_chat("Hello!"))
            # A reload (another model name) keeps the learned limit: same backend, same URL.
            path.write_text(path.read_text() + "  other: {pool: small}\n")
            assert http.post("/admin/reload").json()["status"] == "reloaded"
            again = http.post("/v1/chat/completions", json=_chat(LONG))
        assert replica.replica.engine.num_running == 0
    assert refused.status_code == 400
    error = refused.json()["error"]
    assert error["code"] == "context_length_exceeded"
    assert "maximum context length is 32768 tokens" in error["message"]
    assert "x-gateway-backend" not in refused.headers  # never sent upstream
    assert served.status_code == 200
    assert again.json()["error"]["code"] == "context_length_exceeded"


def test_the_policy_max_context_wins() -> None:
    with sim_replica(speed=50) as replica:
        text = single_pool(
            replica.url, served=SERVED, extra="pools:\n  small: {max_context: 100000}\n"
        )
        app = build_app(load_policy_text(text))
        with serve(app):
            assert app.state.gateway.policy.pools["small"].settings.max_context == 100_000


def test_a_backend_that_does_not_say_leaves_the_pool_unlimited(upstream: str) -> None:
    app = build_app(load_policy_text(single_pool(upstream)))  # the fake: no max_model_len
    with serve(app):
        assert app.state.gateway.policy.pools["small"].settings.max_context is None
        assert not app.state.gateway.policy.checks_context
