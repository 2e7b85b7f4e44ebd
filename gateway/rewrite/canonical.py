"""Canonicalise an OpenAI request body so the backend's prefix cache hits more often.

Algorithm, for chat bodies (``messages``, optional ``tools``):

1. optionally (``hoist_system``) move every system/developer message to the front, keeping
   their order; off by default, since a system message in mid-conversation is an event;
2. normalise whitespace (``whitespace.normalize``) in the text of system/developer messages,
   and of user, assistant and tool messages only when the policy names the transform
   (``Transform``); text parts of list content are handled one by one, other parts are left
   as they are;
3. in the leading system/developer messages, replace each volatile fragment
   (``volatile.VolatileMatcher``; none inside fenced code) with a placeholder ``[label]`` and
   collect it, in order, into one note placed per ``note_placement`` (``note.py``) that
   pairs each placeholder with the text it stands for, verbatim; so the system text before
   it is byte-identical across requests that differ only in those values;
4. only with the ``tool_order`` / ``tool_schema_key_order`` transforms: sort ``tools`` by
   name / the object keys inside them (``tools.py``).

By default nothing outside the system prompt changes: every other message, the tools and
completions prompts are forwarded byte for byte (the note of ``last_user_suffix`` is the one
addition to a user turn, after the user's unchanged text). Completion bodies (``prompt``)
only get whitespace normalisation, with ``completions_whitespace``, the end of each prompt
left as sent: fragments cannot move out of a text the model continues.

Fixed point: a body that already holds a note (in the leading system messages or at the end
of the last user message) gets no extraction, so rewriting twice changes nothing more. The
input is never modified; the new body shares the unchanged messages and values with it, so
treat both as read-only. A client text that already ends with a ``[Context: …]`` line is
taken for a rewritten one: its fragments stay where they are.
Cost: linear in the text of the body, dominated by the volatile scan of the system text.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gateway.rewrite import note
from gateway.rewrite.config import SYSTEM_ROLES, NotePlacement, RewriteConfig, Transform
from gateway.rewrite.record import MovedFragment, RewriteRecord
from gateway.rewrite.tools import canonical_tools
from gateway.rewrite.whitespace import code_spans, normalize

DEFAULT_CONFIG = RewriteConfig()


@dataclass(frozen=True, slots=True)
class RewriteResult:
    body: dict[str, Any]
    record: RewriteRecord


@dataclass(slots=True)
class _Work:
    """Per-call scratch state; never outlives one ``canonicalize`` call."""

    config: RewriteConfig
    extract: bool
    fragments: list[MovedFragment] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    whitespace_changes: int = 0


def canonicalize(body: Mapping[str, Any], config: RewriteConfig = DEFAULT_CONFIG) -> RewriteResult:
    """The canonical form of ``body`` and a record of what changed."""
    messages = body.get("messages")
    if isinstance(messages, list):
        return _chat(body, messages, config)
    if "prompt" in body and config.allows(Transform.COMPLETIONS_WHITESPACE):
        return _completion(body)
    return RewriteResult(dict(body), RewriteRecord())


def _chat(body: Mapping[str, Any], messages: list[Any], config: RewriteConfig) -> RewriteResult:
    hoisted = 0
    if config.hoist_system:
        messages, hoisted = _hoist(messages)
    head = _head_length(messages)
    work = _Work(config, extract=config.extracts and not _has_note(messages, head))
    out = [_message(work, msg, index, index < head) for index, msg in enumerate(messages)]
    placement = _place_note(work, out, head) if work.fragments else None
    new_body = dict(body)
    new_body["messages"] = out
    reordered = keys_sorted = False
    tools = body.get("tools")
    order = config.allows(Transform.TOOL_ORDER)
    sort_keys = config.allows(Transform.TOOL_SCHEMA_KEY_ORDER)
    if (order or sort_keys) and isinstance(tools, list):
        canonical = canonical_tools(tools, order=order, sort_keys=sort_keys)
        new_body["tools"] = canonical.tools
        reordered, keys_sorted = canonical.reordered, canonical.keys_sorted
    record = RewriteRecord(
        fragments=tuple(work.fragments),
        note_placement=placement,
        tools_reordered=reordered,
        tool_keys_sorted=keys_sorted,
        whitespace_changes=work.whitespace_changes,
        system_hoisted=hoisted,
    )
    return RewriteResult(new_body, record)


def _completion(body: Mapping[str, Any]) -> RewriteResult:
    prompt = body.get("prompt")
    changes = 0
    if isinstance(prompt, str):
        new_prompt: Any = normalize(prompt, keep_tail=True)
        changes = int(new_prompt != prompt)
    elif isinstance(prompt, list) and all(isinstance(p, str) for p in prompt):
        new_prompt = [normalize(p, keep_tail=True) for p in prompt]
        changes = sum(a != b for a, b in zip(new_prompt, prompt, strict=True))
    else:  # token ids: nothing to normalise
        new_prompt = prompt
    new_body = dict(body)
    new_body["prompt"] = new_prompt if changes else prompt
    return RewriteResult(new_body, RewriteRecord(whitespace_changes=changes))


def _role(message: Any) -> Any:
    return message.get("role") if isinstance(message, dict) else None


def _hoist(messages: list[Any]) -> tuple[list[Any], int]:
    """System/developer messages first, each group in its order; how many moved forward."""
    system: list[Any] = []
    rest: list[Any] = []
    moved = 0
    for message in messages:
        if _role(message) in SYSTEM_ROLES:
            moved += bool(rest)
            system.append(message)
        else:
            rest.append(message)
    return system + rest, moved


def _head_length(messages: list[Any]) -> int:
    """How many messages at the front are system/developer: the stable head."""
    for index, message in enumerate(messages):
        if _role(message) not in SYSTEM_ROLES:
            return index
    return len(messages)


def _has_note(messages: list[Any], head: int) -> bool:
    candidates = messages[:head]
    last_user = _last_user(messages)
    if last_user is not None:
        candidates = [*candidates, messages[last_user]]
    return any(_content_has_note(m.get("content")) for m in candidates)


def _content_has_note(content: Any) -> bool:
    if isinstance(content, str):
        return note.split_note(content) is not None
    if isinstance(content, list):
        return any(
            isinstance(part, dict)
            and isinstance(part.get("text"), str)
            and note.split_note(part["text"]) is not None
            for part in content
        )
    return False


def _last_user(messages: list[Any]) -> int | None:
    for index in range(len(messages) - 1, -1, -1):
        if _role(messages[index]) == "user":
            return index
    return None


def _message(work: _Work, message: Any, index: int, in_head: bool) -> Any:
    if not isinstance(message, dict):
        return message
    content = message.get("content")
    normalise = message.get("role") in work.config.whitespace_roles
    extract = in_head and work.extract
    if not (normalise or extract):
        return message
    if isinstance(content, str):
        new_content: Any = _text(work, content, index, normalise, extract)
    elif isinstance(content, list):
        new_content = _parts(work, content, index, normalise, extract)
    else:
        return message
    if new_content is content:
        return message
    return {**message, "content": new_content}


def _parts(work: _Work, parts: list[Any], index: int, normalise: bool, extract: bool) -> list[Any]:
    out: list[Any] = []
    changed = False
    for part in parts:
        text = part.get("text") if isinstance(part, dict) and part.get("type") == "text" else None
        if isinstance(text, str):
            new_text = _text(work, text, index, normalise, extract)
            if new_text is not text:
                part = {**part, "text": new_text}
                changed = True
        out.append(part)
    return out if changed else parts


def _text(work: _Work, text: str, index: int, normalise: bool, extract: bool) -> str:
    """The text with whitespace normalised and fragments replaced; ``text`` if unchanged."""
    new = normalize(text) if normalise else text
    if new != text:
        work.whitespace_changes += 1
    else:
        new = text
    return _extract(work, new, index) if extract else new


def _extract(work: _Work, text: str, index: int) -> str:
    found = work.config.matcher.find(text)
    if not found:
        return text
    spans = code_spans(text)
    pieces: list[str] = []
    pos = 0
    for fragment in found:
        if any(lo <= fragment.start < hi for lo, hi in spans):
            continue  # code is literal: an example date in it stays where it is
        ordinal = work.counts.get(fragment.kind, 0) + 1
        work.counts[fragment.kind] = ordinal
        name = note.label(fragment.kind, ordinal)
        work.fragments.append(MovedFragment(fragment.kind, name, fragment.text, index))
        pieces += (text[pos : fragment.start], note.placeholder(name))
        pos = fragment.end
    if not pieces:
        return text
    pieces.append(text[pos:])
    return "".join(pieces)


def _place_note(work: _Work, messages: list[Any], head: int) -> NotePlacement:
    text = note.format_note((f.label, f.text) for f in work.fragments)
    placement = work.config.note_placement
    if placement is NotePlacement.LAST_USER_SUFFIX:
        user = _last_user(messages)
        if user is not None:
            messages[user] = _with_note(messages[user], text)
            return placement
        placement = NotePlacement.SYSTEM_SUFFIX  # no user turn to carry it
    if placement is NotePlacement.SYSTEM_MESSAGE:
        role = messages[head - 1].get("role", "system")
        messages.insert(head, {"role": role, "content": text})
        return placement
    messages[head - 1] = _with_note(messages[head - 1], text)
    return placement


def _with_note(message: dict[str, Any], text: str) -> dict[str, Any]:
    content = message.get("content")
    if isinstance(content, list):
        return {**message, "content": [*content, {"type": "text", "text": text}]}
    base = content if isinstance(content, str) else ""
    return {**message, "content": note.append_note(base, text)}
