"""The gateway's own HTTP server as the policy's ``server`` section sets it
(``commands/process.py``)."""

from __future__ import annotations

import httpx
import uvicorn
from openai._constants import DEFAULT_CONNECTION_LIMITS
from starlette.applications import Starlette

from gateway.commands.process import uvicorn_config
from tests.unit.gateway.helpers import policy

TEXT = """
backends:
  - {name: a, url: http://127.0.0.1:8001, model: m, pool: p}
models:
  m: {pool: p}
"""


def _config(text: str) -> uvicorn.Config:
    return uvicorn_config(Starlette(), policy(text), log_level="warning", host="127.0.0.1", port=0)


def test_idle_client_connections_outlive_what_clients_keep_them() -> None:
    # Closed first by the server, a connection a client reuses at that moment breaks its
    # request (seen with uvicorn's 5 s against httpx's 5 s in a bursty run's quiet gap).
    kept = _config(TEXT).timeout_keep_alive
    for client in (httpx.Limits(), DEFAULT_CONNECTION_LIMITS):  # httpx, the OpenAI SDK
        assert client.keepalive_expiry is not None
        assert kept > 2 * client.keepalive_expiry


def test_the_policys_server_settings_reach_the_server() -> None:
    text = TEXT + "server: {keepalive_timeout_s: 30, max_connections: 50, drain_timeout_s: 7}\n"
    config = _config(text)
    shown = (config.timeout_keep_alive, config.limit_concurrency, config.timeout_graceful_shutdown)
    assert shown == (30, 50, 7)
