"""Settings of the prompt rewrite, checked and compiled once when the policy is built.

``RewriteConfig`` is immutable; building one compiles the volatile-fragment scanners (the
enabled built-in kinds plus operator patterns), so a bad pattern is refused at policy load,
never on the request path.

By default only the system prompt (the system/developer messages) is canonicalised. What
users, assistants and tools wrote, completions prompts and tool definitions are left as sent
unless the policy opts into a named ``Transform``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum

from gateway.rewrite.volatile import (
    BUILTIN_KINDS,
    FragmentCause,
    NamedPattern,
    VolatileMatcher,
    build_matcher,
)

SYSTEM_ROLES = frozenset({"system", "developer"})
_CAUSES: frozenset[str] = frozenset({"timestamp", "id", "other"})
_NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")


class RewriteConfigError(ValueError):
    """A rewrite setting is invalid; the message names the setting and the fix."""


class Transform(StrEnum):
    """A rewrite of something the client wrote outside the system prompt (opt-in, by name).

    ``user_whitespace``, ``assistant_whitespace``, ``tool_whitespace``: whitespace
    normalisation of user, assistant, tool/function messages (trailing spaces go, blank-line
    runs shrink: a TSV's empty trailing fields and text in unfenced code change).
    ``completions_whitespace``: the same on /v1/completions prompts (their end kept).
    ``tool_order``: the ``tools`` list sorted by function name.
    ``tool_schema_key_order``: every JSON object key inside the tools sorted (argument order
    can matter to strict function calling).
    """

    USER_WHITESPACE = "user_whitespace"
    ASSISTANT_WHITESPACE = "assistant_whitespace"
    TOOL_WHITESPACE = "tool_whitespace"
    COMPLETIONS_WHITESPACE = "completions_whitespace"
    TOOL_ORDER = "tool_order"
    TOOL_SCHEMA_KEY_ORDER = "tool_schema_key_order"


# Whose messages each whitespace transform opens up.
_ROLE_TRANSFORMS: dict[Transform, frozenset[str]] = {
    Transform.USER_WHITESPACE: frozenset({"user"}),
    Transform.ASSISTANT_WHITESPACE: frozenset({"assistant"}),
    Transform.TOOL_WHITESPACE: frozenset({"tool", "function"}),
}


class NotePlacement(StrEnum):
    """Where the note holding the moved fragments goes.

    ``system_suffix`` (default): at the end of the last leading system/developer message,
    after a blank line. Every chat template accepts it, and the system text before it stays
    byte-identical, but on engines that render tools after the system text the note sits in
    front of the tools.
    ``system_message``: a separate system message right after the leading ones; keeps the
    tools in the shared prefix on templates that render tools with the first system message,
    but some templates (Mistral, Gemma) refuse a second system message.
    ``last_user_suffix``: at the end of the last user message; the whole history up to that
    message stays shared across the turns of a session, at the cost of the context reading
    as part of the user's turn. The user's text before the note stays byte-identical, but the
    message gains the note: choosing this placement is an opt-in to touching the user turn.
    """

    SYSTEM_SUFFIX = "system_suffix"
    SYSTEM_MESSAGE = "system_message"
    LAST_USER_SUFFIX = "last_user_suffix"


@dataclass(frozen=True, slots=True)
class ExtraPattern:
    """An operator pattern: ``name`` becomes the fragment kind and placeholder label."""

    name: str
    regex: str
    cause: FragmentCause = "other"


@dataclass(frozen=True, slots=True)
class RewriteConfig:
    """What the canonicaliser may do. ``matcher`` and ``whitespace_roles`` are derived."""

    kinds: frozenset[str] = BUILTIN_KINDS
    extra_patterns: tuple[ExtraPattern, ...] = ()
    note_placement: NotePlacement = NotePlacement.SYSTEM_SUFFIX
    transforms: frozenset[Transform] = frozenset()
    hoist_system: bool = False
    matcher: VolatileMatcher = field(init=False, repr=False, compare=False)
    # The roles whose text gets whitespace normalisation: the system prompt's, plus those
    # the transforms open up.
    whitespace_roles: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Accept any iterables and strings from callers, store the immutable forms.
        object.__setattr__(self, "kinds", _kinds(self.kinds))
        object.__setattr__(self, "extra_patterns", tuple(self.extra_patterns))
        object.__setattr__(self, "note_placement", _placement(self.note_placement))
        object.__setattr__(self, "transforms", _transforms(self.transforms))
        roles = set(SYSTEM_ROLES)
        for transform in self.transforms:
            roles |= _ROLE_TRANSFORMS.get(transform, frozenset())
        object.__setattr__(self, "whitespace_roles", frozenset(roles))
        extras = tuple(_compile(p, self.kinds) for p in self.extra_patterns)
        _unique([p.name for p in extras])
        object.__setattr__(self, "matcher", build_matcher(self.kinds, extras))

    @property
    def extracts(self) -> bool:
        """Whether any fragment kind is enabled."""
        return bool(self.kinds or self.extra_patterns)

    def allows(self, transform: Transform) -> bool:
        return transform in self.transforms


def _kinds(kinds: Iterable[str]) -> frozenset[str]:
    if isinstance(kinds, str):
        raise RewriteConfigError("kinds: give a list of kinds, not one string")
    chosen = frozenset(kinds)
    unknown = sorted(chosen - BUILTIN_KINDS)
    if unknown:
        known = ", ".join(sorted(BUILTIN_KINDS))
        raise RewriteConfigError(f"kinds: unknown {', '.join(unknown)}; known kinds: {known}")
    return chosen


def _placement(value: str) -> NotePlacement:
    try:
        return NotePlacement(value)
    except ValueError:
        known = ", ".join(p.value for p in NotePlacement)
        raise RewriteConfigError(f"note_placement: {value!r} is not one of {known}") from None


def _transforms(names: Iterable[str]) -> frozenset[Transform]:
    if isinstance(names, str):
        raise RewriteConfigError("transforms: give a list of transforms, not one string")
    known = {t.value: t for t in Transform}
    chosen = frozenset(names)
    unknown = sorted(chosen - known.keys())
    if unknown:
        raise RewriteConfigError(
            f"transforms: unknown {', '.join(unknown)}; transforms: {', '.join(sorted(known))}"
        )
    return frozenset(known[name] for name in chosen)


def _compile(pattern: ExtraPattern, kinds: frozenset[str]) -> NamedPattern:
    where = f"extra_patterns[{pattern.name!r}]"
    if not _NAME.fullmatch(pattern.name):
        raise RewriteConfigError(
            f"{where}: the name must be 1-32 of a-z, 0-9 and _, starting with a letter"
        )
    if pattern.name in BUILTIN_KINDS:
        raise RewriteConfigError(f"{where}: the name is a built-in kind; pick another name")
    if pattern.cause not in _CAUSES:
        causes = ", ".join(sorted(_CAUSES))
        raise RewriteConfigError(f"{where}: cause {pattern.cause!r} is not one of {causes}")
    try:
        regex = re.compile(pattern.regex)
    except re.error as exc:
        raise RewriteConfigError(f"{where}: invalid regular expression: {exc}") from None
    if regex.fullmatch("") is not None:
        raise RewriteConfigError(f"{where}: the pattern matches the empty string")
    return NamedPattern(pattern.name, regex, pattern.cause)


def _unique(names: list[str]) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise RewriteConfigError(f"extra_patterns: the name {name!r} is used twice")
        seen.add(name)
