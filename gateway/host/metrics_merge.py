"""The workers' Prometheus texts as one exposition, each sample labelled with its worker.

Algorithm: each text is cut into families (a family starts at its ``# HELP`` line; its
``# TYPE`` line and samples follow); families are kept in the order first seen, each with
its ``# HELP`` and ``# TYPE`` once, then the samples of every worker in worker order, each
with ``worker="<row>"`` put first in its labels (``name value`` becomes
``name{worker="<row>"} value``). Label values are never read, so whatever they hold (quotes,
braces) stays as it was. Summing over ``worker`` gives the host's figure for counters and
histograms; gauges are each worker's own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")


def labelled(line: str, worker: str) -> str:
    """One sample line with the ``worker`` label added."""
    name = _NAME.match(line)
    if name is None:
        return line
    end = name.end()
    label = f'worker="{worker}"'
    if line[end : end + 2] == "{}":
        return f"{line[:end]}{{{label}}}{line[end + 2 :]}"
    if line[end : end + 1] == "{":
        return f"{line[:end]}{{{label},{line[end + 1 :]}"
    return f"{line[:end]}{{{label}}}{line[end:]}"


def _families(text: str) -> list[tuple[str, list[str], list[str]]]:
    """(name, comment lines, sample lines) per family, in order."""
    found: list[tuple[str, list[str], list[str]]] = []
    for line in text.splitlines():
        if not line:
            continue
        if line.startswith("# HELP "):
            found.append((line.split(" ", 3)[2], [line], []))
        elif line.startswith("#"):
            if found:
                found[-1][1].append(line)
        elif found:
            found[-1][2].append(line)
        else:
            found.append(("", [], [line]))
    return found


def merge(texts: Mapping[str, str]) -> str:
    """One exposition of every worker's text (``texts``: worker label -> its text)."""
    order: list[str] = []
    heads: dict[str, list[str]] = {}
    samples: dict[str, list[str]] = {}
    for worker, text in texts.items():
        for name, comments, lines in _families(text):
            if name not in heads:
                order.append(name)
                heads[name] = comments
                samples[name] = []
            samples[name].extend(labelled(line, worker) for line in lines)
    out: list[str] = []
    for name in order:
        out.extend(heads[name])
        out.extend(samples[name])
    return "\n".join(out) + "\n"
