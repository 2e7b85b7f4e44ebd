"""Did you mean: the known name closest to a misspelled one.

Algorithm: ``difflib.get_close_matches`` (Ratcliff/Obershelp similarity), the best known name
whose ratio to the word is at least ``CUTOFF`` (0.75: ``objectiv`` -> ``objective``, ``smal``
-> ``small``, but ``colour`` is not ``cluster``), none when nothing is that close.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

CUTOFF = 0.75


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest known name, or ``""``."""
    close = difflib.get_close_matches(word, list(known), n=1, cutoff=CUTOFF)
    return f"; did you mean {close[0]!r}?" if close else ""
