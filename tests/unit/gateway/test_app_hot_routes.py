"""The app's hot routes (POST to an OpenAI endpoint's exact path, served without Starlette's
router and middlewares) answer errors as the middlewares would, and every other request
still goes through Starlette."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import orjson
import pytest
from starlette.requests import Request
from starlette.responses import Response

from gateway.app import build_app
from gateway.errors import RateLimited
from gateway.policy import load_policy_text
from tests.support.policies import single_pool

POLICY = load_policy_text(single_pool("http://127.0.0.1:1"))


async def _call(
    app: Any, method: str, path: str
) -> tuple[int, dict[str, Any], list[Any], BaseException | None]:
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": [(b"content-type", b"application/json")],
        "http_version": "1.1",
        "scheme": "http",
        "server": ("127.0.0.1", 80),
        "client": ("127.0.0.1", 1),
        "root_path": "",
    }
    sent: list[Any] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    raised = None
    try:
        await app(scope, receive, send)
    except RuntimeError as exc:
        raised = exc
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], orjson.loads(body) if body else {}, sent, raised


def _app_with(handler: Any) -> Any:
    app = build_app(POLICY)
    app._hot = {"/v1/chat/completions": handler}
    return app


async def _fails(request: Request) -> Response:
    raise RuntimeError("a bug of ours")


async def _refuses(request: Request) -> Response:
    raise RateLimited("Slow down.", retry_after_s=3)


def test_a_bug_in_a_hot_route_is_a_logged_500(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR)
    status, body, _, raised = asyncio.run(_call(_app_with(_fails), "POST", "/v1/chat/completions"))
    assert status == 500
    assert str(raised) == "a bug of ours"  # raised on after the answer, for the server's log
    assert body["error"]["code"] == "internal_error"
    assert "a bug of ours" not in orjson.dumps(body).decode()
    assert any("unhandled error" in r.getMessage() for r in caplog.records)


def test_a_refusal_raised_in_a_hot_route_renders_as_itself() -> None:
    status, body, sent, raised = asyncio.run(
        _call(_app_with(_refuses), "POST", "/v1/chat/completions")
    )
    assert raised is None
    assert status == 429
    assert body["error"]["message"] == "Slow down."
    headers = dict(next(m for m in sent if m["type"] == "http.response.start")["headers"])
    assert headers[b"retry-after"] == b"3"


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/v1/chat/completions", 405),  # not hot: the router's answer
        ("POST", "/v1/chat/completions/", 307),  # not the exact path: the router redirects
        ("POST", "/v1/chat/completion", 404),
        ("GET", "/healthz", 200),
    ],
)
def test_everything_else_goes_through_starlette(method: str, path: str, status: int) -> None:
    got, _, _, _ = asyncio.run(_call(build_app(POLICY), method, path))
    assert got == status
