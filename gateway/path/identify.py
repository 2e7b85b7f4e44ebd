"""The security checks of the request path, in order: who (key), how big (input limits),
what (model allowed), how often (rate limit). Authentication runs before the body is read;
the rest right after parsing, before any routing work."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from gateway.admission.priority import effective_priority
from gateway.admission.queue import Priority
from gateway.errors import InvalidRequest
from gateway.openai.messages import expected_output_tokens, prompt_chars
from gateway.openai.request import GENERATING, ParsedRequest
from gateway.path.context import RequestContext
from gateway.policy.compile import CompiledPolicy
from gateway.security.input_limits import apply_input_limits
from gateway.security.tenant_limits import TenantRateLimits
from gateway.security.tenants import Caller, authenticate, authorize_model

log = logging.getLogger(__name__)

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


def identify(policy: CompiledPolicy, headers: Mapping[str, str]) -> Caller | None:
    return authenticate(policy.keys, policy.source.auth.tenants, headers)


async def screen(
    policy: CompiledPolicy,
    caller: Caller | None,
    request: ParsedRequest,
    limits: TenantRateLimits,
) -> ParsedRequest:
    """Input limits, model permission and rate limit; the request as it goes on."""
    request = apply_input_limits(request, policy.source.limits)
    authorize_model(caller, request.model)
    if caller is not None:
        tokens = request_tokens(request)
        await limits.charge(policy.source.auth, caller.name, caller.tenant.rate_limit, tokens)
    if policy.source.log_prompts:
        # Off by default: prompts may hold personal data. Only an explicit policy flag logs them.
        who = caller.name if caller else "-"
        # Key-shaped text redacted; the first 64k characters (the scan stays a few ms).
        log.info("prompt of %s: %s", who, policy.redactor.clipped(repr(request.body), 65_536))
    return request


async def identified(
    policy: CompiledPolicy,
    caller: Caller | None,
    request: ParsedRequest,
    headers: Mapping[str, str],
    limits: TenantRateLimits,
    *,
    request_id: str,
    arrival: float,
) -> RequestContext:
    """The request screened (``screen``) and its context: who sent it, at what priority."""
    request = await screen(policy, caller, request, limits)
    return RequestContext(
        request_id,
        arrival,
        request,
        policy,
        headers,
        priority_for(caller, headers),
        tenant=caller.name if caller is not None else None,
        deadline=deadline_of(headers, arrival),
    )


def request_tokens(request: ParsedRequest) -> float:
    body = request.body
    output = expected_output_tokens(body, generates=request.endpoint in GENERATING)
    return prompt_chars(body) / 4 + float(output)


def priority_for(caller: Caller | None, headers: Mapping[str, str]) -> Priority:
    """The tenant's priority is a ceiling ``x-gateway-priority`` may lower, never raise."""
    requested = priority_of(headers) if "x-gateway-priority" in headers else None
    ceiling = _PRIORITIES[caller.tenant.priority] if caller is not None else None
    return effective_priority(requested, ceiling)
