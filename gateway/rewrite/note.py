"""The note that carries moved fragments, and the placeholders that point to it.

A fragment is replaced in place by ``[label]`` and listed in one note,
``[Context: [label] = value; [label] = value]``, appended after a blank line: each entry
repeats the placeholder exactly as it stands in the text, then the text it replaced,
verbatim, so the model reads "quote ticket [uuid] exactly" with the ticket's id at hand.
Labels are the kind for the first fragment of a kind and ``kind N`` for the N-th, so two
requests with the same shape get byte-identical placeholders. (No ``#`` or ``_`` before the
number: the id patterns would read ``request_id#2`` or ``request_id_2`` as an id and move it
again.)
"""

from __future__ import annotations

from collections.abc import Iterable

OPEN = "[Context: "
SEPARATOR = "\n\n"


def label(kind: str, ordinal: int) -> str:
    return kind if ordinal == 1 else f"{kind} {ordinal}"


def placeholder(name: str) -> str:
    return f"[{name}]"


def format_note(items: Iterable[tuple[str, str]]) -> str:
    return OPEN + "; ".join(f"{placeholder(name)} = {value}" for name, value in items) + "]"


def is_note(text: str) -> bool:
    return text.startswith(OPEN) and text.endswith("]") and "\n" not in text


def split_note(text: str) -> tuple[str, str] | None:
    """``(text before the separator, note)`` when ``text`` ends with a note, else ``None``."""
    if not text.endswith("]"):  # O(1), and almost every text fails it
        return None
    if is_note(text):
        return "", text
    at = text.rfind(SEPARATOR + OPEN)
    if at < 0 or not is_note(text[at + len(SEPARATOR) :]):
        return None
    return text[:at], text[at + len(SEPARATOR) :]


def append_note(text: str, note: str) -> str:
    """``text`` then the note, with exactly one blank line between them.

    Only what is missing of the blank line is added, never taken away, so text that ends in
    a code block keeps its bytes and whitespace normalisation leaves the result as it is.
    """
    if not text or text.endswith(SEPARATOR):
        return text + note
    if text.endswith("\n"):
        return text + "\n" + note
    return text + SEPARATOR + note
