"""Keys, secrets and canaries for the security tests.

Each value is unique text that must never show up in logs, metrics or error bodies; the
log-grep test searches for them.
"""

from __future__ import annotations

from gateway.security.api_keys import hash_key

TENANT_A_KEY = "gw-test-tenant-alpha-3f9c1e7a5b2d4f60a8c7e9d1b3f5a7c9"
TENANT_B_KEY = "gw-test-tenant-bravo-0d2e4f6a8b1c3e5f7a9c2d4e6f8a1b3c"
ADMIN_KEY = "gw-test-admin-key-9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d"
UPSTREAM_SECRET = "sk-upstream-secret-7e6d5c4b3a291807f6e5d4c3b2a19080"
UPSTREAM_ENV = "LG_TEST_UPSTREAM_KEY"
PROMPT_CANARY = "canary-prompt-text-5c1f0e9d8b7a"
WRONG_KEY = "gw-wrong-key-canary-1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e"
# Sent to a backend that quotes it back; its tail (letters no id or time holds) is a canary too.
QUOTED_KEY = "cfg-quoted-key-5f4e3d2QZXW"  # shaped like no known key: found as a value
QUOTED_TAIL = QUOTED_KEY[-4:]

CANARIES = (
    TENANT_A_KEY,
    TENANT_B_KEY,
    ADMIN_KEY,
    UPSTREAM_SECRET,
    PROMPT_CANARY,
    WRONG_KEY,
    QUOTED_KEY,
    QUOTED_TAIL,
)


def tenants_yaml(*, alpha_extra: str = "", bravo_models: str = "[fast]") -> str:
    """An ``auth`` section: alpha may use every model, bravo only ``fast``."""
    return f"""
auth:
  tenants:
    alpha:
      keys: ["{hash_key(TENANT_A_KEY)}"]
      priority: critical
{alpha_extra}
    bravo:
      keys: ["{hash_key(TENANT_B_KEY)}"]
      models: {bravo_models}
"""
