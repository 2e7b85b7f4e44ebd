"""Tenants: who is asking (by gateway API key) and what they may use.

With no tenants in the policy the gateway is open, as before. With tenants, every ``/v1``
request must carry ``Authorization: Bearer <key>`` whose hash the policy lists (401
otherwise, before the body is read), and a tenant asking for a public model outside its
``models`` gets 403.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gateway.errors import Forbidden, Unauthorized
from gateway.schema import Policy, Tenant
from gateway.schema.problems import FieldProblem
from gateway.security.api_keys import KeyRing, bearer_token


@dataclass(frozen=True, slots=True)
class Caller:
    """The authenticated tenant of a request."""

    name: str
    tenant: Tenant


def build_tenant_keys(policy: Policy) -> KeyRing:
    return KeyRing.build(
        (key, name) for name, tenant in policy.auth.tenants.items() for key in tenant.keys
    )


def build_admin_keys(policy: Policy) -> KeyRing:
    return KeyRing.build((key, "admin") for key in policy.admin.keys)


def auth_problems(policy: Policy) -> list[FieldProblem]:
    problems: list[FieldProblem] = []
    owner: dict[str, str] = {}
    for name, tenant in policy.auth.tenants.items():
        for i, key in enumerate(tenant.keys):
            if key in owner:
                problems.append(
                    FieldProblem(
                        f"auth.tenants.{name}.keys[{i}]", f"key also listed for {owner[key]!r}"
                    )
                )
            owner[key] = name
        for model in tenant.models or ():
            if model not in policy.models:
                problems.append(
                    FieldProblem(f"auth.tenants.{name}.models", f"unknown model {model!r}")
                )
    for i, key in enumerate(policy.admin.keys):
        if key in owner:
            problems.append(
                FieldProblem(f"admin.keys[{i}]", "an admin key cannot also be a tenant key")
            )
    return problems


def authenticate(
    keys: KeyRing, tenants: Mapping[str, Tenant], headers: Mapping[str, str]
) -> Caller | None:
    """The caller, or None when the policy has no tenants; raises 401 for a bad key."""
    if not keys:
        return None
    token = bearer_token(headers.get("authorization"))
    if token is None:
        raise Unauthorized(
            "Missing API key: send 'Authorization: Bearer <key>'.", code="missing_api_key"
        )
    name = keys.owner_of(token)
    if name is None:
        # Never echo the key, not even a prefix of it.
        raise Unauthorized("Incorrect API key provided.", code="invalid_api_key")
    return Caller(name, tenants[name])


def authorize_model(caller: Caller | None, model: str) -> None:
    if caller is None or caller.tenant.models is None or model in caller.tenant.models:
        return
    raise Forbidden(
        f"The model '{model}' is not available to this API key.",
        param="model",
        code="model_not_allowed",
    )


def visible_models(caller: Caller | None, names: list[str]) -> list[str]:
    if caller is None or caller.tenant.models is None:
        return names
    return [n for n in names if n in caller.tenant.models]
