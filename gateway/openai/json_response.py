"""JSON responses, serialised with orjson."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import Response


def json_response(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(data), status, headers, media_type="application/json")
