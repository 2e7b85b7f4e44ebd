"""What the benchmark commands share on their command line: a comma-separated choice checked
against what exists, and the machine's load average as their reports print it."""

from __future__ import annotations

import os
from collections.abc import Sequence


def chosen(text: str, allowed: Sequence[str], what: str) -> list[str]:
    """The comma-separated names of ``text``; a name not in ``allowed`` stops the command."""
    names = [x.strip() for x in text.split(",") if x.strip()]
    if bad := [n for n in names if n not in allowed]:
        raise SystemExit(f"unknown {what}: {bad}; choose from {tuple(allowed)}")
    return names


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, as ``1.00 / 2.00 / 3.00``."""
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} / {five:.2f} / {fifteen:.2f}"
