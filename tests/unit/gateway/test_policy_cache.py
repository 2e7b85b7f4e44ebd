"""Policy: the semantic cache's hit rule: max_false_hit_rate by default, threshold if set."""

from __future__ import annotations

import pytest

from gateway.policy.loader import load_policy_text
from gateway.schema import SemanticCache
from gateway.schema.problems import PolicyError

POLICY = """
backends:
  - {name: small-1, url: http://h:1, model: m, pool: small}
models: {fast: {pool: small}}
"""


def _semantic(yaml: str) -> SemanticCache:
    policy = load_policy_text(POLICY + f"cache: {{enabled: true, semantic: {{{yaml}}}}}\n")
    return policy.source.cache.semantic


@pytest.mark.parametrize(
    ("yaml", "verifier", "rate", "threshold"),
    [
        ("", True, 0.02, None),
        ("max_false_hit_rate: 0.05", True, 0.05, None),
        ("threshold: 0.9", False, 0.02, 0.9),  # the old rule: cosine and guard
        ("threshold: 0.9, guard: false", False, 0.02, 0.9),
    ],
)
def test_which_rule_decides(
    yaml: str, verifier: bool, rate: float, threshold: float | None
) -> None:
    settings = _semantic(yaml)
    assert settings.verifier == "cross_encoder"
    assert settings.uses_verifier is verifier
    assert settings.max_false_hit_rate == rate
    assert settings.threshold == threshold


@pytest.mark.parametrize(
    ("yaml", "path", "fragment"),
    [
        ("max_false_hit_rate: 0", "max_false_hit_rate", "greater than 0"),
        ("max_false_hit_rate: 0.5", "max_false_hit_rate", "less than 0.5"),
        ("max_false_hit_rate: lots", "max_false_hit_rate", "valid number"),
        ("threshold: 1.5", "threshold", "less than or equal to 1"),
        ("threshold: 0.9, max_false_hit_rate: 0.02", "", "not both"),
    ],
)
def test_bad_settings_are_refused(yaml: str, path: str, fragment: str) -> None:
    with pytest.raises(PolicyError) as info:
        _semantic(yaml)
    problems = info.value.problems
    assert len(problems) == 1, problems
    assert problems[0].path.startswith("cache.semantic"), problems
    assert problems[0].path.endswith(path), problems
    assert fragment in problems[0].reason
