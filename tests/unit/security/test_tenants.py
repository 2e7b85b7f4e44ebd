from textwrap import dedent

import pytest

from gateway.errors import Forbidden, Unauthorized
from gateway.path.plan import Facts, matches
from gateway.policy import PolicyError
from gateway.policy.compile import CompiledPolicy, compile_policy
from gateway.policy.loader import parse_policy
from gateway.schema import RuleWhen
from gateway.security.admin_access import check_admin, is_loopback
from gateway.security.api_keys import hash_key
from gateway.security.tenants import authenticate, authorize_model, visible_models
from tests.support.security import (
    ADMIN_KEY,
    TENANT_A_KEY,
    TENANT_B_KEY,
    UPSTREAM_ENV,
    UPSTREAM_SECRET,
    tenants_yaml,
)

BASE = """\
backends:
  - name: small-0
    url: http://127.0.0.1:9001
    model: org/small
    pool: small
    {backend_extra}
models:
  fast: {{pool: small}}
  smart: {{pool: small}}
"""


def _compile(
    extra: str = "", backend_extra: str = "", env: dict[str, str] | None = None
) -> CompiledPolicy:
    text = BASE.format(backend_extra=backend_extra) + dedent(extra)
    return compile_policy(parse_policy(text, source="t"), source="t", env=env or {})


def test_keys_map_to_tenants_and_bad_keys_get_401() -> None:
    policy = _compile(tenants_yaml())
    tenants = policy.source.auth.tenants
    caller = authenticate(policy.keys, tenants, {"authorization": f"Bearer {TENANT_A_KEY}"})
    assert caller is not None
    assert caller.name == "alpha"
    assert caller.tenant.priority == "critical"
    for headers in ({}, {"authorization": "Bearer nope"}, {"authorization": TENANT_A_KEY}):
        with pytest.raises(Unauthorized) as refused:
            authenticate(policy.keys, tenants, headers)
        assert TENANT_A_KEY not in refused.value.message
        assert refused.value.http_status() == 401


def test_no_tenants_means_open() -> None:
    policy = _compile()
    assert authenticate(policy.keys, policy.source.auth.tenants, {}) is None


def test_models_outside_the_tenant_list_get_403_and_are_hidden() -> None:
    policy = _compile(tenants_yaml())
    tenants = policy.source.auth.tenants
    bravo = authenticate(policy.keys, tenants, {"authorization": f"Bearer {TENANT_B_KEY}"})
    authorize_model(bravo, "fast")
    with pytest.raises(Forbidden):
        authorize_model(bravo, "smart")
    assert visible_models(bravo, ["fast", "smart"]) == ["fast"]


def test_compile_refuses_unknown_models_and_shared_keys() -> None:
    shared = hash_key(TENANT_A_KEY)
    extra = f"""
    auth:
      tenants:
        a: {{keys: ["{shared}"], models: [nope]}}
        b: {{keys: ["{shared}"]}}
    """
    with pytest.raises(PolicyError) as refused:
        _compile(extra)
    rendered = refused.value.render()
    assert "unknown model 'nope'" in rendered
    assert "also listed for 'a'" in rendered


def test_upstream_key_comes_from_the_environment_and_never_shows() -> None:
    policy = _compile(
        backend_extra=f"api_key_env: {UPSTREAM_ENV}", env={UPSTREAM_ENV: UPSTREAM_SECRET}
    )
    spec = policy.backends[0]
    assert spec.api_key is not None
    assert spec.api_key.reveal() == UPSTREAM_SECRET
    assert UPSTREAM_SECRET not in repr(spec) + repr(policy.source) + str(spec.api_key)
    assert UPSTREAM_SECRET not in str(policy.source.model_dump(mode="json"))


def test_a_missing_upstream_key_names_the_variable() -> None:
    with pytest.raises(PolicyError) as refused:
        _compile(backend_extra=f"api_key_env: {UPSTREAM_ENV}", env={})
    assert UPSTREAM_ENV in refused.value.render()


def test_tier_rules_can_match_tenants() -> None:
    facts = Facts(length="short", difficulty=0.1, priority="standard", model="auto", tenant="a")
    assert matches(RuleWhen(tenant=["a"]), facts)
    assert not matches(RuleWhen(tenant=["b"]), facts)
    anonymous = Facts(length="short", difficulty=0.1, priority="standard", model="auto")
    assert not matches(RuleWhen(tenant=["a"]), anonymous)


def test_rules_naming_unknown_tenants_are_refused() -> None:
    extra = """
    routing:
      rules:
        - {name: r, when: {tenant: [ghost]}, pool: small}
    """
    with pytest.raises(PolicyError, match="unknown tenant 'ghost'"):
        _compile(extra)


def test_admin_localhost_mode() -> None:
    policy = _compile()
    check_admin(policy.source.admin, policy.admin_keys, "127.0.0.1", {})
    check_admin(policy.source.admin, policy.admin_keys, "::1", {})
    for host in ("10.0.0.8", "192.168.1.2", None, "not-an-ip"):
        with pytest.raises(Forbidden):
            check_admin(policy.source.admin, policy.admin_keys, host, {})
    assert is_loopback("127.8.0.1")


def test_admin_key_mode_asks_everyone_for_the_key() -> None:
    policy = _compile(f'admin: {{mode: key, keys: ["{hash_key(ADMIN_KEY)}"]}}\n')
    check_admin(
        policy.source.admin, policy.admin_keys, "10.0.0.8", {"authorization": f"Bearer {ADMIN_KEY}"}
    )
    for headers in ({}, {"authorization": f"Bearer {TENANT_A_KEY}"}):
        with pytest.raises(Unauthorized):
            check_admin(policy.source.admin, policy.admin_keys, "127.0.0.1", headers)


def test_passwords_inside_urls_are_masked() -> None:
    from gateway.security.redact import redact

    dumped = {
        "auth": {"redis_url": "redis://:hunter2@cache:6379/0"},
        "backends": [{"url": "https://bob:s3cret@api.example:8443/v1"}, {"url": "http://x:1"}],
    }
    shown = redact(dumped)
    assert shown["auth"]["redis_url"] == "redis://:***@cache:6379/0"
    assert shown["backends"][0]["url"] == "https://bob:***@api.example:8443/v1"
    assert shown["backends"][1]["url"] == "http://x:1"
    assert "hunter2" not in str(shown)
