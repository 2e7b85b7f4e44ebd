"""What admission needs to know about a request: priority, deadline, lane and cost.

Priority comes from ``x-gateway-priority`` (critical | standard | sheddable, default
standard), the deadline from ``x-gateway-deadline-ms`` (milliseconds from arrival). The prompt's
size is estimated at about four characters per token, which is all the lane choice needs;
the cost is prompt plus requested output tokens (``max_tokens`` or a default of 256).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.admission.controller import AdmissionRequest
from gateway.admission.queue import Lane, Priority
from gateway.classify.messages import message_texts, requested_max_tokens
from gateway.errors import InvalidRequest
from gateway.path.context import RequestContext

DEFAULT_OUTPUT_TOKENS = 256
_PRIORITIES = {p.name.lower(): p for p in Priority}


def priority_of(headers: Mapping[str, str]) -> Priority:
    value = headers.get("x-gateway-priority")
    if value is None:
        return Priority.STANDARD
    priority = _PRIORITIES.get(value.strip().lower())
    if priority is None:
        raise InvalidRequest(
            f"x-gateway-priority must be one of {', '.join(_PRIORITIES)}; got {value!r}.",
            param="x-gateway-priority",
            code="invalid_header",
        )
    return priority


def deadline_of(headers: Mapping[str, str], arrival: float) -> float | None:
    value = headers.get("x-gateway-deadline-ms")
    if value is None:
        return None
    if not value.strip().isdigit() or int(value) <= 0:
        raise InvalidRequest(
            f"x-gateway-deadline-ms must be a positive whole number (milliseconds); got {value!r}.",
            param="x-gateway-deadline-ms",
            code="invalid_header",
        )
    return arrival + int(value) / 1000


def prompt_chars(body: Mapping[str, Any]) -> int:
    if "messages" in body:
        return sum(len(text) for m in body["messages"] for text in message_texts(m))
    prompt = body.get("prompt")
    if isinstance(prompt, str):
        return len(prompt)
    if isinstance(prompt, list):
        # Token ids count as about four characters each.
        return sum(len(p) if isinstance(p, str) else 4 for p in prompt)
    return 0


def admission_request(
    ctx: RequestContext, long_prompt_tokens: int, degradable: bool
) -> AdmissionRequest:
    body = ctx.request.body
    prompt_tokens = prompt_chars(body) / 4
    output = requested_max_tokens(body) or DEFAULT_OUTPUT_TOKENS
    return AdmissionRequest(
        priority=ctx.priority,
        lane=Lane.LONG if prompt_tokens >= long_prompt_tokens else Lane.SHORT,
        cost=prompt_tokens + float(output),
        deadline=deadline_of(ctx.headers, ctx.arrival),
        degradable=degradable,
        prompt_tokens=prompt_tokens,
    )
