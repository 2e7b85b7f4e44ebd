"""``/dashboard`` (the page) and ``/dashboard/data`` (what it shows, as JSON)."""

from __future__ import annotations

from importlib.resources import files

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Route

from gateway.dashboard.read import view
from gateway.edge.admin import read_only
from gateway.edge.responses import json_response


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
    response = json_response(view(gateway, gateway.dashboard))
    response.headers["cache-control"] = "no-store"
    return response
