"""The format of a request's ask, as the learned difficulty model tells formats apart.

``choice``: a multiple-choice question, the ask having answer options on lines of their own
that start with ``A.`` then ``B.`` (or ``A)``, ``(A)``; capital letters, as exams and MMLU
write them; a lower-case ``a)`` list is an enumeration, not options). ``free``: anything else.

Why: what makes the large model gain on a multiple-choice question (the subject, the exam's
quirks) does not carry over to a free-form request, and the reverse; the model fits one set of
weights per format on top of weights they share (``fitting/text_fit.py``). Two regex scans of the
features' window, linear in its length.
"""

from __future__ import annotations

import re
from typing import Literal

Format = Literal["choice", "free"]
FORMATS: tuple[Format, ...] = ("choice", "free")
_OPTION_A = re.compile(r"^\(?A[.)][ \t]", re.MULTILINE)
_OPTION_B = re.compile(r"^\(?B[.)][ \t]", re.MULTILINE)


def prompt_format(window: str) -> Format:
    """The format of an ask whose window (``text_terms.window``) is ``window``."""
    if "A." not in window and "A)" not in window:  # two C scans rule out most asks
        return "free"
    first = _OPTION_A.search(window)
    # Two linear scans (the second from the first option on), no backtracking.
    if first is not None and _OPTION_B.search(window, first.end()) is not None:
        return "choice"
    return "free"
