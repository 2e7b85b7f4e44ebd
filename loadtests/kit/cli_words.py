"""What the benchmark commands share on their command line: a comma-separated choice checked
against what exists, the run's sizes (each given one, else the quick or full default), and the
machine's load average as their reports print it."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from dataclasses import fields, replace
from typing import Any, TypeVar

S = TypeVar("S", bound=Any)  # a dataclass of sizes


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


def sized(args: argparse.Namespace, quick: S, full: S) -> S:
    """``quick`` or ``full`` (``args.quick``), with each field the command line gave
    (an attribute of ``args`` of the same name, not None) instead."""
    base = quick if args.quick else full
    given = {f.name: getattr(args, f.name, None) for f in fields(base)}
    return replace(base, **{k: v for k, v in given.items() if v is not None})
