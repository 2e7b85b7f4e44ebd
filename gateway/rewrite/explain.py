"""Explain why a prompt no longer extends the previous prompt of its session.

Algorithm: both prompts are canonical texts (``serialize.py``). The first differing character
``d`` is found with chunked slice compares and a binary search (``str.startswith`` first,
which settles the common case, a pure extension, in one C call). If the current prompt holds
the whole previous one (``d`` is its end), the backend can reuse all of it: no break. Else
the cause is decided at ``d``, first rule that applies:

1. ``tool_order``: ``d`` is in the tools segment of both and the tools are the same
   set (compared with sorted keys) in another order or with keys in another order;
2. ``timestamp`` / ``id``: a volatile fragment (the rewrite's own matcher, looked up in a
   window of ``_WINDOW`` characters around ``d``) covers ``d`` in either prompt, or ``d``
   falls in a rewrite note (``[Context: …]``) whose first fragment has that cause;
3. ``whitespace``: the segment holding ``d`` differs only in whitespace;
4. ``system_prompt``: ``d`` is in a system/developer segment of either prompt;
5. ``edited_history``: ``d`` is in an earlier user/assistant/tool turn (changed, removed,
   or a turn put in before it);
6. ``other``: anything else (tool definitions changed, completion prompt changed).

Parameters: the volatile matcher, and a token counter for the offset (default: ~4
characters per token, ``estimate_tokens``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

import orjson

from gateway.rewrite import note
from gateway.rewrite.serialize import SerializedPrompt
from gateway.rewrite.volatile import VolatileMatcher

TokenCounter = Callable[[str], int]
_WINDOW = 96  # longest fragment we expect around the break, either side
_CHUNK = 4096
_SYSTEM = frozenset({"system", "developer"})
_TURNS = frozenset({"user", "assistant", "tool", "function"})


class BreakCause(StrEnum):
    TIMESTAMP = "timestamp"
    ID = "id"
    TOOL_ORDER = "tool_order"
    WHITESPACE = "whitespace"
    EDITED_HISTORY = "edited_history"
    SYSTEM_PROMPT = "system_prompt"
    OTHER = "other"


_FRAGMENT_CAUSES = {"timestamp": BreakCause.TIMESTAMP, "id": BreakCause.ID}


@dataclass(frozen=True, slots=True)
class PrefixBreak:
    """Where the current prompt leaves the previous one, and why."""

    char_offset: int
    token_offset: int
    cause: BreakCause
    previous_chars: int

    @property
    def reused_fraction(self) -> float:
        """Share of the previous prompt still usable as a cached prefix."""
        return self.char_offset / self.previous_chars if self.previous_chars else 0.0

    def header_value(self) -> str:
        """The value of ``x-gateway-prefix-break``."""
        return f"offset={self.token_offset}; cause={self.cause.value}"


def estimate_tokens(text: str) -> int:
    """About four characters per token, rounded up: cheap and engine-independent."""
    return (len(text) + 3) // 4


def common_prefix_length(a: str, b: str) -> int:
    """Length of the longest common prefix of ``a`` and ``b``."""
    if len(a) <= len(b) and b.startswith(a):
        return len(a)
    size = min(len(a), len(b))
    lo = 0
    while lo < size and a[lo : lo + _CHUNK] == b[lo : lo + _CHUNK]:
        lo += _CHUNK
    if lo >= size:
        return size
    hi = min(lo + _CHUNK, size + 1)  # the first difference is in [lo, hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    return lo


@dataclass(frozen=True, slots=True)
class PrefixExplainer:
    matcher: VolatileMatcher
    count_tokens: TokenCounter = estimate_tokens

    def explain(self, previous: SerializedPrompt, current: SerializedPrompt) -> PrefixBreak | None:
        """The break of ``current`` against ``previous``; ``None`` if it extends it.

        When ``previous`` was cut to a bound, only its kept text is compared.
        """
        if previous.digest == current.digest:
            return None
        offset = common_prefix_length(previous.text, current.text)
        if offset >= len(previous.text):
            return None
        cause = self._cause(previous, current, offset)
        tokens = self.count_tokens(current.text[:offset])
        return PrefixBreak(offset, tokens, cause, previous.length)

    def _cause(self, previous: SerializedPrompt, current: SerializedPrompt, at: int) -> BreakCause:
        p_start, p_end, p_role = previous.segment(previous.segment_index(at))
        c_start, c_end, c_role = current.segment(current.segment_index(at))
        same_segment = p_start == c_start and p_role == c_role
        if (
            same_segment
            and p_role == "tools"
            and (p_end < len(previous.text) or not previous.truncated)  # the whole segment
            and _same_tools(previous.text[p_start:p_end], current.text[c_start:c_end])
        ):
            return BreakCause.TOOL_ORDER
        fragment = (
            self._fragment_cause(previous.text, at)
            or self._fragment_cause(current.text, at)
            or self._note_cause(previous.text[p_start:p_end], at - p_start)
            or self._note_cause(current.text[c_start:c_end], at - c_start)
        )
        if fragment is not None:
            return fragment
        if same_segment and _only_whitespace(
            previous.text[p_start:p_end], current.text[c_start:c_end], previous.truncated
        ):
            return BreakCause.WHITESPACE
        roles = {p_role, c_role}
        if roles & _SYSTEM:
            return BreakCause.SYSTEM_PROMPT
        if roles & _TURNS:
            return BreakCause.EDITED_HISTORY
        return BreakCause.OTHER

    def _fragment_cause(self, text: str, at: int) -> BreakCause | None:
        for fragment in self.matcher.find(text, max(0, at - _WINDOW), at + _WINDOW):
            if fragment.start <= at < fragment.end:
                return _FRAGMENT_CAUSES.get(self.matcher.cause_of(fragment.kind))
        return None

    def _note_cause(self, segment: str, at: int) -> BreakCause | None:
        # A rewrite note that moved (e.g. to the newest user turn) breaks where it was.
        where = segment.rfind("\n" + note.OPEN)
        if where < 0 or at < where:
            return None
        for fragment in self.matcher.find(segment, where):
            cause = _FRAGMENT_CAUSES.get(self.matcher.cause_of(fragment.kind))
            if cause is not None:
                return cause
        return None


def _same_tools(previous: str, current: str) -> bool:
    """Whether two tools segments hold the same tools, up to tool and key order."""
    try:
        return _tool_set(previous) == _tool_set(current)
    except orjson.JSONDecodeError:
        return False


def _tool_set(segment: str) -> list[bytes]:
    lines = segment.split("\n")[1:]  # the header, then one tool per line
    return sorted(
        orjson.dumps(orjson.loads(line), option=orjson.OPT_SORT_KEYS) for line in lines if line
    )


def _only_whitespace(previous: str, current: str, previous_cut: bool) -> bool:
    squeezed_previous = "".join(previous.split())
    squeezed_current = "".join(current.split())
    if previous_cut:  # only the kept start of the previous segment is known
        return squeezed_current.startswith(squeezed_previous)
    return squeezed_previous == squeezed_current
