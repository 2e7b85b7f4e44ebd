"""RewriteConfig: defaults, normalised inputs, and errors that name the problem."""

from __future__ import annotations

from typing import get_args

import pytest

from gateway.policy.loader import load_policy_text
from gateway.rewrite import (
    ExtraPattern,
    NotePlacement,
    RewriteConfig,
    RewriteConfigError,
    Transform,
)
from gateway.rewrite.volatile import BUILTIN_KINDS
from gateway.schema.rewrite_settings import TransformName
from tests.unit.gateway.helpers import MINIMAL_POLICY


def test_defaults() -> None:
    config = RewriteConfig()
    assert config.kinds == BUILTIN_KINDS
    assert config.note_placement is NotePlacement.SYSTEM_SUFFIX
    assert config.whitespace_roles == frozenset({"system", "developer"})
    assert config.transforms == frozenset()
    assert not config.hoist_system
    assert config.extracts
    assert not RewriteConfig(kinds=frozenset()).extracts


def test_inputs_are_normalised() -> None:
    config = RewriteConfig(
        kinds=["uuid"],  # type: ignore[arg-type]
        extra_patterns=[ExtraPattern("ticket", r"T-\d+", "id")],  # type: ignore[arg-type]
        note_placement="last_user_suffix",  # type: ignore[arg-type]
        transforms=["user_whitespace", "tool_order"],  # type: ignore[arg-type]
    )
    assert config.kinds == frozenset({"uuid"})
    assert isinstance(config.extra_patterns, tuple)
    assert config.note_placement is NotePlacement.LAST_USER_SUFFIX
    assert config.transforms == frozenset({Transform.USER_WHITESPACE, Transform.TOOL_ORDER})
    assert config.whitespace_roles == frozenset({"system", "developer", "user"})
    assert [f.kind for f in config.matcher.find("T-7 and 2026-11-21")] == ["ticket"]
    assert config == RewriteConfig(
        kinds=frozenset({"uuid"}),
        extra_patterns=(ExtraPattern("ticket", r"T-\d+", "id"),),
        note_placement=NotePlacement.LAST_USER_SUFFIX,
        transforms=frozenset({Transform.USER_WHITESPACE, Transform.TOOL_ORDER}),
    )


# id -> (keyword arguments, words the error message must contain)
ERRORS: dict[str, tuple[dict[str, object], tuple[str, ...]]] = {
    "invalid regex": (
        {"extra_patterns": (ExtraPattern("ticket", r"T-(\d+"),)},
        ("extra_patterns['ticket']", "invalid regular expression", "missing )"),
    ),
    "empty match": (
        {"extra_patterns": (ExtraPattern("maybe", r"x*"),)},
        ("'maybe'", "empty string"),
    ),
    "bad name": (
        {"extra_patterns": (ExtraPattern("Bad Name", r"x"),)},
        ("'Bad Name'", "a-z"),
    ),
    "builtin name": (
        {"extra_patterns": (ExtraPattern("uuid", r"x"),)},
        ("built-in kind",),
    ),
    "duplicate": (
        {"extra_patterns": (ExtraPattern("t", r"x"), ExtraPattern("t", r"y"))},
        ("'t'", "twice"),
    ),
    "bad cause": (
        {"extra_patterns": (ExtraPattern("t", r"x", "clock"),)},  # type: ignore[arg-type]
        ("cause 'clock'",),
    ),
    "unknown kind": ({"kinds": frozenset({"dates"})}, ("unknown dates", "request_id")),
    "kinds as string": ({"kinds": "uuid"}, ("list of kinds",)),
    "placement": ({"note_placement": "top"}, ("note_placement", "'top'", "system_suffix")),
    "transforms": (
        {"transforms": frozenset({"sort_everything"})},
        ("unknown sort_everything", "tool_schema_key_order"),
    ),
    "transforms as string": ({"transforms": "user_whitespace"}, ("list of transforms",)),
}


@pytest.mark.parametrize(("kwargs", "words"), ERRORS.values(), ids=list(ERRORS))
def test_errors(kwargs: dict[str, object], words: tuple[str, ...]) -> None:
    with pytest.raises(RewriteConfigError) as caught:
        RewriteConfig(**kwargs)  # type: ignore[arg-type]
    for word in words:
        assert word in str(caught.value)
    assert isinstance(caught.value, ValueError)  # pydantic validators turn it into a field error


def test_the_policy_schema_names_every_transform() -> None:
    assert set(get_args(TransformName)) == {t.value for t in Transform}


def test_policy_transforms_reach_the_compiled_config() -> None:
    text = MINIMAL_POLICY + "rewrite: {transforms: [tool_schema_key_order, user_whitespace]}\n"
    config = load_policy_text(text).rewrite
    assert config.transforms == {Transform.TOOL_SCHEMA_KEY_ORDER, Transform.USER_WHITESPACE}
    assert load_policy_text(MINIMAL_POLICY).rewrite.transforms == frozenset()
