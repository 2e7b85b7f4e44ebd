"""One command per real backend: set it up (cached), or set it up and serve it.

``python -m loadtests.real llamacpp setup`` builds llama.cpp's server and assembles the
model; ``python -m loadtests.real llamacpp serve --port 8091`` also starts it, waits for
health, prints its URL and serves until Ctrl-C. The same for ``vllm`` (vLLM's CPU build in
its own venv and the model converted to a Hugging Face folder). ``... llamacpp predictor``
(or ``vllm predictor``) starts the server, puts a gateway in front and prints the errors of
its TTFT predictor per cell (``predictor.py``); ``--url`` uses a server already running.
The cache root is printed first (``cache.py`` says how to move it).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import threading
import time
from pathlib import Path

from loadtests.real.cache import cache_root
from loadtests.real.chat_template import write_chat_template
from loadtests.real.launch import llamacpp_server
from loadtests.real.llamacpp import ServeOptions, ensure_server
from loadtests.real.model import SERVED_NAME, ensure_gguf
from loadtests.real.predictor import Plan, measure
from loadtests.real.predictor_table import markdown, table
from loadtests.real.vllm_cpu import VllmOptions, ensure_hf_folder, ensure_vllm, vllm_server


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    root = cache_root()
    print(f"cache: {root}", flush=True)
    started = time.monotonic()
    if args.action == "setup":
        _setup(args.backend, root)
        print(f"{args.backend} ready in {time.monotonic() - started:.0f} s", flush=True)
        return
    if args.action == "predictor" and args.url:
        _predictor(args, args.url)
        return
    if args.backend == "llamacpp":
        options = ServeOptions(port=args.port, served_name=SERVED_NAME, parallel=args.parallel)
        with llamacpp_server(root, options) as url:
            _act(args, url, started)
    else:
        vllm_options = VllmOptions(
            port=args.port, served_name=SERVED_NAME, max_num_seqs=args.max_num_seqs
        )
        with vllm_server(root, vllm_options) as url:
            _act(args, url, started)


def _act(args: argparse.Namespace, url: str, started: float) -> None:
    if args.action == "predictor":
        _predictor(args, url)
    else:
        _serve_until_interrupted(url, started)


def _predictor(args: argparse.Namespace, url: str) -> None:
    plan = Plan(rounds=args.rounds, passes=args.passes)
    print(f"predictor on {args.backend} at {url}: {plan.requests()} requests", flush=True)
    started = time.monotonic()
    run = asyncio.run(measure(url, args.backend, plan, slots=args.slots))
    refused = sum(1 for s in run.samples if s.status != 200)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"{len(run.samples)} requests in {time.monotonic() - started:.0f} s, {refused} not 200,"
        f" {run.error_count:.0f} in the error histogram; load average {load}\n",
        flush=True,
    )
    print(markdown(table(run)), flush=True)


def _setup(backend: str, root: Path) -> None:
    if backend == "llamacpp":
        print(f"llama-server: {ensure_server(root)}", flush=True)
    print(f"model: {ensure_gguf(root)}", flush=True)
    print(f"chat template: {write_chat_template(root)}", flush=True)
    if backend == "vllm":
        print(f"vllm: {ensure_vllm(root)}", flush=True)
        print(f"model folder: {ensure_hf_folder(root)}", flush=True)


def _serve_until_interrupted(url: str, started: float) -> None:
    print(f"serving {SERVED_NAME} at {url} (up in {time.monotonic() - started:.1f} s)", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    stop.wait()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m loadtests.real", description=__doc__)
    parser.add_argument("backend", choices=["llamacpp", "vllm"])
    parser.add_argument("action", choices=["setup", "serve", "predictor"])
    parser.add_argument("--port", type=int, default=8091)
    parser.add_argument("--parallel", type=int, default=4, help="llama.cpp slots")
    parser.add_argument("--max-num-seqs", type=int, default=None, help="vLLM: at once")
    parser.add_argument("--url", help="predictor: a server already running")
    parser.add_argument("--slots", type=int, default=4, help="predictor: in flight at once")
    parser.add_argument("--rounds", type=int, default=Plan().rounds, help="predictor: per client")
    parser.add_argument("--passes", type=int, default=Plan().passes, help="predictor: measured")
    return parser


if __name__ == "__main__":
    main()
