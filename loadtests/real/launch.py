"""Start a real backend as a child process, wait until it serves, always stop it.

``llamacpp_server`` and (in ``vllm_cpu.py``) ``vllm_server`` set up what is missing in the
cache first (see ``llamacpp.py``, ``model.py``), then start the server with its output in
``<cache>/logs/<name>-<port>.log`` and wait for ``/health`` (``gateway.children.running``).
``llamacpp_process`` yields the server's process too (its process group is the server's own
session), for tests that kill it. Parameters: the cache root, the port, and the server's
options.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from gateway.children import running
from loadtests.real.cache import is_done
from loadtests.real.chat_template import write_chat_template
from loadtests.real.llamacpp import ServeOptions, ensure_server, server_argv, server_binary
from loadtests.real.model import ensure_gguf, gguf_path


def log_path(root: Path, name: str, port: int) -> Path:
    return root / "logs" / f"{name}-{port}.log"


@dataclass(frozen=True, slots=True)
class Process:
    """A server that runs: its base URL and its process."""

    url: str
    proc: subprocess.Popen[bytes]


@contextmanager
def llamacpp_process(root: Path, options: ServeOptions) -> Iterator[Process]:
    """A healthy llama.cpp server serving the real model, and its process."""
    argv = server_argv(ensure_server(root), ensure_gguf(root), write_chat_template(root), options)
    url = f"http://127.0.0.1:{options.port}"
    log = log_path(root, "llamacpp", options.port)
    with running(argv, [url + "/health"], log, timeout_s=120) as proc:
        yield Process(url, proc)


@contextmanager
def llamacpp_server(root: Path, options: ServeOptions) -> Iterator[str]:
    """Yield the base URL of a healthy llama.cpp server serving the real model."""
    with llamacpp_process(root, options) as server:
        yield server.url


def llamacpp_ready(root: Path) -> bool:
    """Whether the server and the model are in the cache (nothing to build or download)."""
    return is_done(server_binary(root)) and is_done(gguf_path(root))
