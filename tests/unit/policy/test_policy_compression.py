"""Policy: per-pool compression settings, their defaults and cross-field checks."""

from __future__ import annotations

import pytest

from gateway.policy.loader import load_policy_text
from gateway.schema.problems import PolicyError

TWO_POOLS = """
backends:
  - {name: small-1, url: http://h:1, model: m, pool: small}
  - {name: large-1, url: http://h:2, model: m, pool: large}
models: {fast: {pool: small}}
"""


def test_off_by_default() -> None:
    policy = load_policy_text(TWO_POOLS)
    settings = policy.pools["small"].settings.compression
    assert not settings.enabled
    assert not settings.summary.enabled
    assert settings.keep_last_turns == 4


def test_enabled_with_a_summary_pool() -> None:
    policy = load_policy_text(
        TWO_POOLS
        + "pools:\n  large:\n    max_context: 8192\n    compression:\n"
        + "      {enabled: true, keep_last_turns: 2, summary: {enabled: true, pool: small}}\n"
    )
    settings = policy.pools["large"].settings.compression
    assert settings.enabled
    assert settings.summary.pool == "small"


@pytest.mark.parametrize(
    ("pools", "path", "fragment"),
    [
        ("large: {compression: {enabled: true}}", "pools.large.compression", "budget_tokens"),
        (
            "large: {max_context: 4096, compression: {budget_tokens: 4096}}",
            "pools.large.compression.budget_tokens",
            "below max_context",
        ),
        (
            "large: {max_context: 4096, compression: {enabled: true, summary: {enabled: true}}}",
            "pools.large.compression.summary.pool",
            "must name a pool",
        ),
        (
            "large: {compression: {enabled: true, budget_tokens: 900, "
            "summary: {enabled: true, pool: tiny}}}",
            "pools.large.compression.summary.pool",
            "must name a pool",
        ),
        (
            "large: {compression: {keep_last_turns: 0}}",
            "pools.large.compression.keep_last_turns",
            "greater than or equal to 1",
        ),
        ("large: {compression: {colour: red}}", "pools.large.compression.colour", "unknown key"),
        (
            "small: {max_context: 2048}, large: {compression: {enabled: true, budget_tokens: 900, "
            "summary: {enabled: true, pool: small}}}",
            "pools.large.compression.summary.max_input_tokens",
            "must fit pool 'small'",
        ),
    ],
)
def test_bad_settings_are_refused(pools: str, path: str, fragment: str) -> None:
    with pytest.raises(PolicyError) as info:
        load_policy_text(TWO_POOLS + f"pools: {{{pools}}}\n")
    problems = info.value.problems
    assert [p.path for p in problems] == [path], problems
    assert fragment in problems[0].reason
