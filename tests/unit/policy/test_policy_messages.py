"""What a newcomer reads when a policy is wrong: the file named in YAML errors, and the
closest allowed key or known pool for a misspelled one ("did you mean")."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.policy import PolicyError, load_policy_file
from gateway.policy.loader import known_keys, parse_policy
from gateway.schema import Policy
from gateway.schema.suggest import did_you_mean

BASE = """
backends:
  - {name: b0, url: "http://127.0.0.1:9", model: m, pool: small}
models:
  m: {pool: small}
"""
# id -> (policy text added to BASE, the problem rendered)
CASES = {
    "a key of a pool's admission": (
        "pools:\n  small: {admission: {objectiv: {ttft_s: 2}}}\n",
        "pools.small.admission.objectiv: unknown key; did you mean 'objective'?",
    ),
    "a key inside a list item": (
        "routing:\n  rules:\n    - {name: r, when: {lenght: [long]}, pool: small}\n",
        "routing.rules[0].when.lenght: unknown key; did you mean 'length'?",
    ),
    "a top-level key": ("clasify: {}\n", "clasify: unknown key; did you mean 'classify'?"),
    "nothing close": ("colour: blue\n", "colour: unknown key"),
    "a pool named by a model": (
        "  n: {pool: smal}\n",
        "models.n.pool: unknown pool 'smal'; did you mean 'small'? (known: ['small'])",
    ),
    "a pool's settings under a misspelled name": (
        "pools:\n  smal: {}\n",
        "pools.smal: pool has no backends; did you mean 'small'?",
    ),
}


@pytest.mark.parametrize(("extra", "problem"), CASES.values(), ids=CASES)
def test_misspellings_name_the_closest(extra: str, problem: str, tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(BASE + extra)
    with pytest.raises(PolicyError) as caught:
        load_policy_file(path)
    assert problem in [line.strip() for line in caught.value.render().splitlines()]


def test_yaml_errors_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("backends:\n  - {name: b0\nmodels: x\n")
    with pytest.raises(PolicyError) as caught:
        load_policy_file(path)
    text = caught.value.render()
    assert f'in "{path}", line 2' in text
    assert "<unicode string>" not in text


def test_yaml_errors_of_text_name_its_source() -> None:
    with pytest.raises(PolicyError) as caught:
        parse_policy("a: [", source="inline")
    assert 'in "inline"' in caught.value.render()


@pytest.mark.parametrize(
    ("loc", "some"),
    [
        ((), {"backends", "models", "pools"}),
        (("pools", "small"), {"admission", "timeouts", "max_context"}),
        (("pools", "small", "admission"), {"objective", "ladder"}),
        (("backends", 0), {"name", "url", "pool"}),
        (("routing", "rules", 3, "when"), {"length", "difficulty_at_least"}),
        (("models", "m", "nope"), set()),
    ],
)
def test_known_keys_follow_models_mappings_and_lists(
    loc: tuple[int | str, ...], some: set[str]
) -> None:
    keys = set(known_keys(Policy, loc))
    assert some <= keys
    assert bool(keys) == bool(some)


@pytest.mark.parametrize(
    ("word", "known", "said"),
    [
        ("smal", ["small", "large"], "; did you mean 'small'?"),
        ("lrage", ["small", "large"], "; did you mean 'large'?"),
        ("gpu", ["small", "large"], ""),
        ("x", [], ""),
    ],
)
def test_did_you_mean(word: str, known: list[str], said: str) -> None:
    assert did_you_mean(word, known) == said
