"""Through a real gateway with the default policy (rewriting on): what reaches the backend
holds every user, assistant and tool message, the tools and completions prompts byte for byte
as the client sent them, while the system prompt is still canonicalised."""

from __future__ import annotations

from typing import Any

import httpx2 as httpx
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loadtests.kit.fake_upstream import FakeLog
from tests.integration.conftest import GatewayFactory
from tests.support.client_content import chat_bodies, completion_bodies, protected
from tests.support.policies import single_pool

_SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _forwarded(http: httpx.Client, fake_log: FakeLog, path: str, body: dict[str, Any]) -> Any:
    seen = len(fake_log.bodies)
    response = http.post(path, content=orjson.dumps(body))
    assert response.status_code == 200, response.text
    return fake_log.bodies[seen]


# (path, bodies): one gateway per endpoint, many generated bodies through it.
ENDPOINTS = {
    "chat": ("/v1/chat/completions", chat_bodies()),
    "completions": ("/v1/completions", completion_bodies()),
}


@pytest.mark.parametrize(("path", "bodies"), ENDPOINTS.values(), ids=list(ENDPOINTS))
def test_what_clients_wrote_reaches_the_backend_as_sent(
    upstream: str,
    fake_log: FakeLog,
    start_gateway: GatewayFactory,
    path: str,
    bodies: st.SearchStrategy[dict[str, Any]],
) -> None:
    with start_gateway(single_pool(upstream)) as url, httpx.Client(base_url=url) as http:

        @_SETTINGS
        @given(bodies)
        def one(body: dict[str, Any]) -> None:
            assert protected(_forwarded(http, fake_log, path, body)) == protected(body)

        one()


def test_the_system_prompt_is_still_canonicalised_and_the_note_says_what_moved(
    gateway: str, fake_log: FakeLog
) -> None:
    system = "Quote ticket 3f2a1c4e-1b2c-4d5e-8f90-0123456789ab exactly.  \n\n\n\nBe brief."
    user = "My TSV:\na\tb\t\t\nc\t\t\t\n\n\n\n```\nkeep  \n```\n"
    body = {
        "model": "fast",
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {"z": 1, "a": 2}}}],
    }
    with httpx.Client(base_url=gateway) as http:
        sent = _forwarded(http, fake_log, "/v1/chat/completions", body)
    assert sent["messages"][0]["content"] == (
        "Quote ticket [uuid] exactly.\n\nBe brief.\n\n"
        "[Context: [uuid] = 3f2a1c4e-1b2c-4d5e-8f90-0123456789ab]"
    )
    assert sent["messages"][1]["content"] == user
    assert list(sent["tools"][0]["function"]["parameters"]) == ["z", "a"]
