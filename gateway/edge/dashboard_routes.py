"""``/dashboard`` (the page) and ``/dashboard/data`` (what it shows, as JSON; with
``?since=<at>`` only the history points after that one, so the page fetches the last 15
minutes once and then only what is new)."""

from __future__ import annotations

import math
from importlib.resources import files

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Route

from gateway.edge.admin_routes import read_only
from gateway.edge.dashboard_data import view
from gateway.errors import InvalidRequest
from gateway.openai.json_response import json_response
from gateway.runtime.host_worker import whole_snapshot


def dashboard_routes() -> list[BaseRoute]:
    page = files("gateway.dashboard").joinpath("static/index.html").read_text(encoding="utf-8")

    async def show(request: Request) -> Response:
        read_only(request, "dashboard")
        return HTMLResponse(page, headers={"cache-control": "no-store"})

    return [
        Route("/dashboard", show, methods=["GET"]),
        Route("/dashboard/data", data, methods=["GET"]),
    ]


async def data(request: Request) -> Response:
    gateway = read_only(request, "dashboard")
    since = _since(request)
    response = json_response(view(gateway, gateway.dashboard, since, await whole_snapshot(gateway)))
    response.headers["cache-control"] = "no-store"
    return response


def _since(request: Request) -> float | None:
    raw = request.query_params.get("since")
    if raw is None:
        return None
    try:
        since = float(raw)
    except ValueError:
        since = math.nan
    if not math.isfinite(since):
        raise InvalidRequest(
            f"since must be a number (a point's 'at'), not {raw[:40]!r}", param="since"
        )
    return since
