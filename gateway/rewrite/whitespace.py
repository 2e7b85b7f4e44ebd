"""Whitespace normalisation that leaves fenced code alone.

Algorithm: find fenced code blocks (CommonMark: a line of three or more backticks or tildes
indented at most three spaces opens a block, the next line of at least as many of the same
character with nothing but whitespace after closes it; an unclosed block runs to the end).
Outside them, in this order: CRLF becomes LF, spaces and tabs at the end of a line are
removed, and runs of blank lines shrink to one blank line. Inside them nothing changes,
not even line endings, because whitespace there can be meaning (diffs, Makefiles, Python).

The result is a fixed point (normalising twice changes nothing more): the edits only touch
ends of lines and blank lines, so the fence lines, which decide the blocks, stay the same.
A cheap substring test skips texts that need nothing, which is most of them.

Parameter: ``keep_tail`` leaves the trailing whitespace of the whole text untouched (for
completion prompts, where the model continues from the last character).
"""

from __future__ import annotations

import re

_TRAILING = re.compile(r"[ \t]+(?=\n|\Z)")
_BLANK_RUN = re.compile(r"\n{3,}")
_FENCE = re.compile(r"[ ]{0,3}(`{3,}|~{3,})([^\n]*)")  # matched at a line start
_DIRTY = re.compile(r"\n(?:(?<=[ \t\r]\n)|\n\n)")  # CRLF, trailing blank, 3 newlines


def normalize(text: str, *, keep_tail: bool = False) -> str:
    """``text`` with whitespace normalised outside fenced code."""
    if keep_tail:
        body_end = len(text.rstrip())
        return normalize(text[:body_end]) + text[body_end:]
    if not _needs_work(text):
        return text
    spans = code_spans(text)
    if not spans:
        return _plain(text)
    pieces: list[str] = []
    pos = 0
    for lo, hi in spans:
        pieces.append(_plain(text[pos:lo]))
        pieces.append(text[lo:hi])
        pos = hi
    pieces.append(_plain(text[pos:]))
    return "".join(pieces)


def code_spans(text: str) -> list[tuple[int, int]]:
    """``[start, end)`` of each fenced code block, fence lines included."""
    markers = tuple(m for m in ("```", "~~~") if m[0] in text)  # memchr: usually none
    spans: list[tuple[int, int]] = []
    pos = 0
    while markers and (opening := _next_fence(text, pos, markers)) is not None:
        fence, info = opening.group(1), opening.group(2)
        if fence[0] == "`" and "`" in info:  # not a fence: inline code at a line start
            pos = opening.end()
            continue
        end = _closing(text, opening.end(), fence)
        spans.append((opening.start(), end))
        pos = end
    return spans


def _next_fence(text: str, pos: int, markers: tuple[str, ...]) -> re.Match[str] | None:
    """The next fence line at or after ``pos``.

    Found with ``str.find`` (a multiline ``^`` regex scan costs ~10x more), then checked
    with an anchored match at the start of the line.
    """
    while True:
        hits = [at for at in (_find_marker(text, m, pos) for m in markers) if at >= 0]
        if not hits:
            return None
        at = min(hits)
        line = text.rfind("\n", 0, at) + 1
        match = _FENCE.match(text, line) if at - line <= 3 else None
        if match is not None and match.start(1) == at:
            return match
        pos = text.find("\n", at)
        if pos < 0:
            return None


def _find_marker(text: str, marker: str, pos: int) -> int:
    # memchr for the first character, then a compare: ``str.find("```")`` is slow because
    # "`" and " " share a bit in CPython's search bloom mask, so spaces defeat its skips.
    while (at := text.find(marker[0], pos)) >= 0:
        if text.startswith(marker, at):
            return at
        pos = at + 1
    return -1


def _closing(text: str, pos: int, fence: str) -> int:
    """End of the line closing ``fence`` after ``pos``, or the end of the text."""
    while (line := _next_fence(text, pos, (fence[:3],))) is not None:
        candidate = line.group(1)
        if candidate[0] == fence[0] and len(candidate) >= len(fence) and not line.group(2).strip():
            return line.end()
        pos = line.end()
    return len(text)


def _needs_work(text: str) -> bool:
    # One literal-led regex pass (sre jumps between newlines at C speed); two-character
    # ``in`` tests cost as much each.
    return _DIRTY.search(text) is not None or text.endswith((" ", "\t"))


def _plain(text: str) -> str:
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    if " " in text or "\t" in text:
        text = _TRAILING.sub("", text)
    if "\n\n\n" in text:
        text = _BLANK_RUN.sub("\n\n", text)
    return text
