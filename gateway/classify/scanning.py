"""The one word split of a request's window that the cheap features (``features.py``) and
the learned text model (``text_model.py``) read.

Algorithm: the window (the ask's head and tail, cut by ``features.scan``) is lower-cased,
its punctuation turned into spaces (``_TO_SPACE``) and split on whitespace into words (UTF-8
bytes). Its instruction is the window without fenced code blocks, keeping only its
paragraphs (blank-line separated) of at most ``limit`` characters; longer paragraphs are
quoted material (documents, logs). ``instruction_spans`` gives that text and the spans of the
window it is made of; code fences and paragraph breaks are separators, so no word crosses a
span's edge, and the window is split once, span by span: the instruction's words are those of
its spans. When the window is not ASCII (a character's offset is then not its byte's) or the
instruction is a cut of a paragraph, the instruction is split on its own.

The request features read only a few words of the instruction (``vocabulary.INSTRUCTION_CUES``),
so the instruction keeps only those (``Instruction.cues``): the cue words of the whole window
(one intersection over its distinct words), each then looked for among the instruction's
words, which is a list scan that stops at the first occurrence; with more than
``_SCANNED_CUES`` of them, one pass over the instruction's words instead. Cost: one lower-casing,
translation and split of the window, one set of its words, and a scan per cue word found.
"""

from __future__ import annotations

from typing import NamedTuple

from gateway.classify.vocabulary import INSTRUCTION_CUES

_PUNCT = b"()[]{}<>.,;:=+-*/\\\"'`_#!?&|%$@^~"
_TO_SPACE = bytes.maketrans(_PUNCT, b" " * len(_PUNCT))
# What a word never contains: the translated punctuation and bytes.split's whitespace.
_SEPARATORS = (_PUNCT + b" \t\n\r\x0b\x0c").decode("ascii")
_SCANNED_CUES = 4  # beyond this many cue words, one pass over the words beats a scan each


class Text(NamedTuple):
    """One text as the features read it."""

    text: str
    lower: str
    raw: bytes  # ``lower`` as UTF-8
    words: frozenset[bytes]
    n_words: int
    order: list[bytes]  # the words in order (``text_terms.words`` of ``text``)


class Instruction(NamedTuple):
    """The instruction of a window, as the request features read it."""

    text: str
    lower: str
    cues: frozenset[bytes]  # its words that are in ``vocabulary.INSTRUCTION_CUES``
    n_words: int


class Scan(NamedTuple):
    """What the features read of an ask (``features.scan``)."""

    whole: Text  # the scanned window: material and instruction
    instruction: Instruction  # its short paragraphs, code blocks removed


def text_of(text: str) -> Text:
    """``text`` lower-cased and split into words."""
    lower = text.lower()
    raw = lower.encode("utf-8", "surrogatepass")
    words = raw.translate(_TO_SPACE).split()
    return Text(text, lower, raw, frozenset(words), len(words), words)


def split_window(text: str, limit: int) -> Scan:
    """The window ``text`` and its instruction (paragraphs of at most ``limit`` characters),
    split into words once when its characters are ASCII."""
    instruction, spans = instruction_spans(text, limit)
    if instruction == text:
        whole = text_of(text)
        return Scan(whole, Instruction(text, whole.lower, _cues(whole, whole.order), whole.n_words))
    if spans is None or not text.isascii():  # str offsets are then not byte offsets
        whole, said = text_of(text), text_of(instruction)
        return Scan(
            whole, Instruction(instruction, said.lower, _cues(said, said.order), said.n_words)
        )
    lower = text.lower()
    raw = lower.encode("utf-8", "surrogatepass")
    spaced = raw.translate(_TO_SPACE)
    order: list[bytes] = []
    kept: list[bytes] = []
    at = 0
    for start, end in spans:
        order += spaced[at:start].split()
        words = spaced[start:end].split()
        order += words
        kept += words
        at = end
    order += spaced[at:].split()
    whole = Text(text, lower, raw, frozenset(order), len(order), order)
    return Scan(whole, Instruction(instruction, instruction.lower(), _cues(whole, kept), len(kept)))


def _cues(whole: Text, words: list[bytes]) -> frozenset[bytes]:
    """The cue words among ``words`` (a part of ``whole``'s)."""
    found = whole.words & INSTRUCTION_CUES
    if not found or words is whole.order:
        return found
    if len(found) > _SCANNED_CUES:
        return found.intersection(words)
    return frozenset(word for word in found if word in words)


def instruction_spans(text: str, limit: int) -> tuple[str, list[tuple[int, int]] | None]:
    """The part of a message that asks, without the material it quotes (code blocks, and
    paragraphs over ``limit`` characters), and the spans of ``text`` it is made of, in order
    (None when it is a cut of the first paragraph: no paragraph is short enough). Spans only
    separators apart are one span, so a run of kept paragraphs is one span."""
    if "```" in text:
        parts = text.split("```")
        segments, at = [], 0  # each part outside the fences: (start in text, length)
        for i, part in enumerate(parts):
            if i % 2 == 0:
                segments.append((at, len(part)))
            at += len(part) + 3
        joined = "\n".join(parts[0::2])
    else:
        segments, joined = [(0, len(text))], text
    if "\n\n" not in joined:
        return joined, _merged(text, [(start, start + size) for start, size in segments])
    paragraphs = joined.split("\n\n")
    # Long paragraphs are pasted material (documents, logs); short ones carry the request.
    keep = [part for part in paragraphs if len(part) <= limit]
    if not keep:
        return paragraphs[0][:limit], None
    spans: list[tuple[int, int]] = []
    at, segment, offset = 0, 0, 0  # offset: where the segment starts in the joined text
    for part in paragraphs:
        end = at + len(part)
        while len(part) <= limit:  # the paragraph's pieces, one per segment it covers
            start, size = segments[segment]
            if at > offset + size:  # past this segment and the newline that joined it on
                offset, segment = offset + size + 1, segment + 1
                continue
            stop = min(end, offset + size)
            if stop > at:
                spans.append((start + at - offset, start + stop - offset))
            if end <= offset + size + 1:
                break
            offset, segment = offset + size + 1, segment + 1
            at = offset
        at = end + 2
    return "\n".join(keep), _merged(text, spans)


def _merged(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``spans`` with those only separators apart joined into one."""
    out: list[tuple[int, int]] = []
    for start, end in spans:
        if out and not text[out[-1][1] : start].strip(_SEPARATORS):
            out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out
