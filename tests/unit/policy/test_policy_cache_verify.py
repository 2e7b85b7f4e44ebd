"""Policy: sampled verification of semantic hits (``cache.semantic.verify``), off by default."""

from __future__ import annotations

import pytest

from gateway.policy.loader import load_policy_text
from gateway.schema import CacheVerify
from gateway.schema.problems import PolicyError

POLICY = """
backends:
  - {name: small-1, url: http://h:1, model: m, pool: small}
models: {fast: {pool: small}}
"""


def _verify(yaml: str) -> CacheVerify:
    text = POLICY + f"cache: {{enabled: true, semantic: {{verify: {{{yaml}}}}}}}\n"
    return load_policy_text(text).source.cache.semantic.verify


def test_off_by_default() -> None:
    settings = load_policy_text(POLICY + "cache: {enabled: true}\n").source.cache.semantic.verify
    assert settings == CacheVerify()
    assert settings.sample == 0.0


@pytest.mark.parametrize(
    ("yaml", "field", "value"),
    [
        ("sample: 0.1", "sample", 0.1),
        ("sample: 1", "sample", 1.0),
        ("max_inflight: 8", "max_inflight", 8),
        ("answer_min_cosine: 0.95", "answer_min_cosine", 0.95),
        ("margin: 0", "margin", 0.0),
        ("max_disagreements: 1", "max_disagreements", 1),
    ],
)
def test_good_settings(yaml: str, field: str, value: float) -> None:
    assert getattr(_verify(yaml), field) == value


@pytest.mark.parametrize(
    ("yaml", "field", "fragment"),
    [
        ("sample: -0.1", "sample", "greater than or equal to 0"),
        ("sample: 1.5", "sample", "less than or equal to 1"),
        ("sample: often", "sample", "valid number"),
        ("max_inflight: 0", "max_inflight", "greater than or equal to 1"),
        ("answer_min_cosine: 0", "answer_min_cosine", "greater than 0"),
        ("margin: 0.9", "margin", "less than or equal to 0.5"),
        ("max_disagreements: 0", "max_disagreements", "greater than or equal to 1"),
        ("samples: 0.1", "samples", "unknown key"),
    ],
)
def test_bad_settings_are_refused(yaml: str, field: str, fragment: str) -> None:
    with pytest.raises(PolicyError) as info:
        _verify(yaml)
    problems = info.value.problems
    assert len(problems) == 1, problems
    assert problems[0].path == f"cache.semantic.verify.{field}", problems
    assert fragment in problems[0].reason, problems
