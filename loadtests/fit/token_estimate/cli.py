"""Offline calibration of ``gateway.classify.estimate`` against real BPE token counts.

Not part of the gateway: it needs ``tiktoken``
with the ``cl100k_base`` encoding available offline (``TIKTOKEN_CACHE_DIR`` pointing at its
cached file) and numpy, and it reads text that ships with a Debian image with Python 3.11,
Node.js and git docs. Run::

    TIKTOKEN_CACHE_DIR=... python -m loadtests.fit.token_estimate

It cuts 600-5,000-character chunks of English prose (stdlib docstrings, Markdown docs,
licences) and code (Python, C headers, JavaScript, Go, JSON), counts their tokens, fits the
coefficients by least squares on relative error (weights 1/y, no intercept) and prints the
coefficients with the error per kind of text.
"""

from __future__ import annotations

import ast
import glob
import random
import re
from collections.abc import Iterator

import numpy as np
import tiktoken  # type: ignore[import-not-found,unused-ignore]

from gateway.classify.estimate import text_counts

SEED = 7


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return ""


def _chunks(text: str, n: int, rng: random.Random) -> Iterator[str]:
    if len(text) < 800:
        return
    for _ in range(n):
        size = rng.choice([600, 1500, 3000, 5000])
        if len(text) <= size:
            yield text
            return
        start = rng.randrange(0, len(text) - size)
        yield text[start : start + size]


def _docstrings(paths: list[str]) -> str:
    found: list[str] = []
    for path in paths:
        try:
            tree = ast.parse(_read(path))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.ClassDef | ast.Module):
                doc = ast.get_docstring(node)
                if doc and len(doc) > 200:
                    found.append(doc)
    return "\n\n".join(found)


def corpus(rng: random.Random) -> list[tuple[str, str]]:
    """(kind, text) chunks of prose and code found on the machine."""
    py = sorted(glob.glob("/usr/lib/python3.11/*.py"))
    rng.shuffle(py)
    out = [("english", c) for c in _chunks(_docstrings(py[:120]), 60, rng)]
    md = sorted(glob.glob("/usr/share/doc/**/*.md", recursive=True))
    rng.shuffle(md)
    for path in md[:80]:
        prose = re.sub(r"```.*?```", "", _read(path), flags=re.S)
        out += [("markdown", c) for c in _chunks(prose, 1, rng)]
    for path in sorted(glob.glob("/usr/share/common-licenses/*"))[:8]:
        out += [("english", c) for c in _chunks(_read(path), 2, rng)]
    for path in py[120:200]:
        out += [("python", c) for c in _chunks(_read(path), 1, rng)]
    headers = sorted(glob.glob("/usr/include/*.h"))
    rng.shuffle(headers)
    for path in headers[:40]:
        out += [("c", c) for c in _chunks(_read(path), 1, rng)]
    scripts = sorted(glob.glob("/usr/share/doc/**/*.js", recursive=True))
    rng.shuffle(scripts)
    for path in scripts[:40]:
        text = _read(path)
        if ".min." not in path and text.count("\n") > len(text) / 200:
            out += [("js", c) for c in _chunks(text, 1, rng)]
    for path in sorted(glob.glob("/usr/share/doc/git/contrib/**/*.go", recursive=True)):
        out += [("go", c) for c in _chunks(_read(path), 2, rng)]
    data = sorted(glob.glob("/usr/share/**/*.json", recursive=True))
    rng.shuffle(data)
    for path in data[:15]:
        out += [("json", c) for c in _chunks(_read(path), 1, rng)]
    return out


def main() -> None:
    rng = random.Random(SEED)
    chunks = corpus(rng)
    encoding = tiktoken.get_encoding("cl100k_base")
    y = np.array([len(encoding.encode(t, disallowed_special=())) for _, t in chunks], float)
    x = np.array([text_counts(t)[:5] for _, t in chunks], float)  # non-ASCII set by hand
    coef, *_ = np.linalg.lstsq(x / y[:, None], np.ones(len(y)), rcond=None)
    rel = (x @ coef - y) / y
    print("coefficients (visible, words, punct, newlines, digits):", np.round(coef, 4))
    print(
        f"chunks {len(y)}  mean |error| {np.mean(np.abs(rel)):.3f}  p95 "
        f"{np.percentile(np.abs(rel), 95):.3f}  total bias {(x @ coef).sum() / y.sum() - 1:+.3f}"
    )
    for kind in sorted({k for k, _ in chunks}):
        mask = np.array([k == kind for k, _ in chunks])
        print(f"  {kind:9s} n={mask.sum():3d} mean |error| {np.mean(np.abs(rel[mask])):.3f}")
    other = tiktoken.get_encoding("o200k_base")
    y2 = np.array([len(other.encode(t, disallowed_special=())) for _, t in chunks], float)
    print(f"against o200k_base: mean |error| {np.mean(np.abs((x @ coef - y2) / y2)):.3f}")
