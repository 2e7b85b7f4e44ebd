import logging

import pytest

from gateway.admission.queue import Priority
from gateway.errors import RateLimited
from gateway.openai.parse import parse_request
from gateway.path.identify import identify, priority_for, screen
from gateway.policy import load_policy_text
from gateway.security.tenant_limits import TenantRateLimits
from tests.support.security import TENANT_A_KEY, TENANT_B_KEY, tenants_yaml

# Not one of the session guard's canaries: this test logs it on purpose.
OPT_IN_PROMPT = "opt-in-logged-prompt-4e1d"

POLICY = """
backends:
  - {name: s0, url: "http://127.0.0.1:1", model: m, pool: small}
models:
  fast: {pool: small}
  auto: {route: auto}
"""
RAW = b'{"model": "fast", "messages": [{"role": "user", "content": "%s"}]}' % OPT_IN_PROMPT.encode()


async def _screen(log_prompts: bool, caplog: pytest.LogCaptureFixture) -> str:
    policy = load_policy_text(
        POLICY + tenants_yaml() + f"log_prompts: {str(log_prompts).lower()}\n"
    )
    caller = identify(policy, {"authorization": f"Bearer {TENANT_A_KEY}"})
    with caplog.at_level(logging.DEBUG, logger="gateway"):
        await screen(policy, caller, parse_request("chat", RAW), TenantRateLimits(lambda: 0.0))
    return caplog.text


async def test_prompts_are_logged_only_when_the_policy_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert OPT_IN_PROMPT not in await _screen(False, caplog)
    caplog.clear()
    assert OPT_IN_PROMPT in await _screen(True, caplog)


def test_the_tenant_priority_is_a_ceiling_the_header_may_only_lower() -> None:
    policy = load_policy_text(POLICY + tenants_yaml())
    alpha = identify(policy, {"authorization": f"Bearer {TENANT_A_KEY}"})
    bravo = identify(policy, {"authorization": f"Bearer {TENANT_B_KEY}"})
    assert priority_for(alpha, {}) is Priority.CRITICAL
    assert priority_for(alpha, {"x-gateway-priority": "sheddable"}) is Priority.SHEDDABLE
    assert priority_for(bravo, {}) is Priority.STANDARD
    assert priority_for(bravo, {"x-gateway-priority": "critical"}) is Priority.STANDARD
    assert priority_for(None, {"x-gateway-priority": "critical"}) is Priority.CRITICAL
    assert priority_for(None, {}) is Priority.STANDARD


async def test_screen_charges_the_tenants_bucket() -> None:
    policy = load_policy_text(
        POLICY + tenants_yaml(alpha_extra="      rate_limit: {requests_per_minute: 1}")
    )
    caller = identify(policy, {"authorization": f"Bearer {TENANT_A_KEY}"})
    limits = TenantRateLimits(lambda: 0.0)
    await screen(policy, caller, parse_request("chat", RAW), limits)
    with pytest.raises(RateLimited):
        await screen(policy, caller, parse_request("chat", RAW), limits)
