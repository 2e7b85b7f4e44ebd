"""Admin endpoints: reload the policy, show the active one."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from gateway.responses import json_response
from gateway.runtime import Gateway


def admin_routes() -> list[BaseRoute]:
    return [
        Route("/admin/reload", reload_policy, methods=["POST"]),
        Route("/admin/policy", show_policy, methods=["GET"]),
    ]


def _gateway(request: Request) -> Gateway:
    gateway: Gateway = request.app.state.gateway
    return gateway


async def reload_policy(request: Request) -> Response:
    result = await _gateway(request).holder.reload()
    if result.ok:
        return json_response(
            {"status": "reloaded" if result.changed else "unchanged", "digest": result.digest}
        )
    body = {
        "error": {
            "message": result.error or "reload failed",
            "type": "invalid_policy",
            "param": None,
            "code": "policy_rejected",
        },
        "digest": result.digest,
    }
    return json_response(body, 400 if _gateway(request).holder.path is not None else 409)


async def show_policy(request: Request) -> Response:
    gateway = _gateway(request)
    policy = gateway.policy
    path = gateway.holder.path
    return json_response(
        {
            "digest": policy.digest,
            "path": str(path) if path is not None else None,
            "policy": policy.source.model_dump(mode="json"),
        }
    )
