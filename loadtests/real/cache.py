"""Where the real backends are cached between runs, and the subprocess helper the set-up
steps share.

The root is ``$XDG_CACHE_HOME/latency-gateway`` (default ``~/.cache/latency-gateway``), or
``$LATENCY_GATEWAY_CACHE`` when set. A step that produces a directory or file writes a stamp
(``<name>.ok``) beside it when it succeeds, so an interrupted build is never mistaken for a
cached one.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path


class SetupError(RuntimeError):
    """A set-up step failed; the message ends with the tail of its log."""


def cache_root() -> Path:
    explicit = os.environ.get("LATENCY_GATEWAY_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "latency-gateway"


def stamp(path: Path) -> Path:
    return path.with_name(path.name + ".ok")


def is_done(path: Path) -> bool:
    return path.exists() and stamp(path).exists()


def mark_done(path: Path) -> None:
    stamp(path).write_text("ok\n")


def run_logged(
    argv: Sequence[str],
    log_path: Path,
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> None:
    """Run ``argv`` to completion with its output appended to ``log_path``; raise
    ``SetupError`` with the log's last lines if it fails."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        log.write(f"$ {' '.join(argv)}\n".encode())
        log.flush()
        done = subprocess.run(
            list(argv),
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=None if env is None else {**os.environ, **env},
            check=False,
        )
    if done.returncode != 0:
        tail = "\n".join(log_path.read_text(errors="replace").splitlines()[-30:])
        raise SetupError(f"{argv[0]} failed ({done.returncode}); {log_path} ends with:\n{tail}")
