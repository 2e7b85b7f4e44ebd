"""Admin endpoints: reload the policy, show the active one; each behind ``check_admin``, as
are the read-only endpoints the policy's ``admin.protect`` lists (``read_only``).

``/admin/policy`` shows the validated policy, in which a backend's upstream key appears only
as the name of its environment variable, gateway keys only as hashes, and passwords inside
URLs (a Redis URL, a backend URL) masked."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from gateway.errors import PolicyRejected
from gateway.openai.json_response import json_response
from gateway.runtime.host_worker import reload_everywhere
from gateway.runtime.parts import Gateway
from gateway.security.admin_access import check_admin
from gateway.security.redact import redact


def admin_routes() -> list[BaseRoute]:
    return [
        Route("/admin/reload", reload_policy, methods=["POST"]),
        Route("/admin/policy", show_policy, methods=["GET"]),
    ]


def _gateway(request: Request) -> Gateway:
    """The gateway, once the caller passed the policy's admin check (raises 401/403)."""
    gateway: Gateway = request.app.state.gateway
    client = request.client.host if request.client is not None else None
    policy = gateway.policy
    check_admin(policy.source.admin, policy.admin_keys, client, request.headers)
    return gateway


def read_only(request: Request, endpoint: str) -> Gateway:
    """The gateway, for a read-only endpoint (``metrics``, ``dashboard``, ``openapi``): open,
    unless the policy's ``admin.protect`` lists it, then behind the admin check."""
    gateway: Gateway = request.app.state.gateway
    if endpoint in gateway.policy.source.admin.protect:
        return _gateway(request)
    return gateway


async def reload_policy(request: Request) -> Response:
    gateway = _gateway(request)
    # With ``serve --workers N`` every worker reloads; ``workers`` says what each did.
    result, workers = await reload_everywhere(gateway)
    if result.ok:
        status = "reloaded" if result.changed else "unchanged"
        body = {"status": status, "digest": result.digest}
        return json_response({**body, "workers": workers} if workers else body)
    raise PolicyRejected(
        result.error or "reload failed",
        digest=result.digest,
        from_file=gateway.holder.path is not None,
    )


async def show_policy(request: Request) -> Response:
    gateway = _gateway(request)
    policy = gateway.policy
    path = gateway.holder.path
    return json_response(
        {
            "digest": policy.digest,
            "path": str(path) if path is not None else None,
            "policy": redact(policy.source.model_dump(mode="json")),
        }
    )
