"""Kill a real server mid-stream, and the requests around it: the uninterrupted answer, the
stream cut by the kill, and the continuation of its partial text on another server.

- ``llamacpp_pair``: two llama.cpp servers on the real model (``launch.llamacpp_process``),
  each with its process, stopped on exit (a killed one is simply gone).
- ``stream_text``: stream a chat and collect its text, how it ended (``done``: ``[DONE]``
  came; ``broken``: the connection broke; ``clean``: it ended without ``[DONE]``; or an
  error event's text), how many chunks carried text, and its usage when asked for; after
  ``kill_after`` chunks with text, it kills the server's whole process group with SIGKILL
  (no clean shutdown: a dying process) and reads on until the stream ends, keeping whatever
  still arrives.
- ``continuation_body``: the request that continues a partial answer on another server: the
  messages plus the partial text as a final assistant message, with
  ``continue_final_message: true`` and ``add_generation_prompt: false`` (what vLLM needs;
  llama.cpp accepts the same; it also prefills a trailing assistant message by itself, but
  then streams that message's text again before the rest).

Greedy decoding (``temperature: 0``) makes the answer a function of the prompt, so the
partial text plus its continuation can be compared with one uninterrupted run.
Parameters: the cache root, the ports, ``kill_after``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2 as httpx
import orjson

from loadtests.real.launch import Process, llamacpp_process
from loadtests.real.llamacpp import ServeOptions
from loadtests.real.model import SERVED_NAME

CHAT = "/v1/chat/completions"


@contextlib.contextmanager
def llamacpp_pair(
    root: Path, ports: tuple[int, int], parallel: int = 2
) -> Iterator[tuple[Process, Process]]:
    """Two llama.cpp servers on the real model, started one after the other."""
    first, second = (ServeOptions(port=p, served_name=SERVED_NAME, parallel=parallel)
                     for p in ports)  # fmt: skip
    with llamacpp_process(root, first) as a, llamacpp_process(root, second) as b:
        yield a, b


def kill(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the server's process group at once (it runs in a session of its own)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def greedy_body(messages: list[dict[str, str]], max_tokens: int, **extra: Any) -> dict[str, Any]:
    """A streamed chat whose answer depends on its prompt only."""
    return {"model": SERVED_NAME, "messages": messages, "max_tokens": max_tokens,
            "temperature": 0, "seed": 0, "stream": True, **extra}  # fmt: skip


def continuation_body(body: dict[str, Any], partial: str, used_tokens: int) -> dict[str, Any]:
    """``body`` continued after ``partial`` (``used_tokens`` of its ``max_tokens`` spent)."""
    messages = [*body["messages"], {"role": "assistant", "content": partial}]
    return {**body, "messages": messages, "max_tokens": body["max_tokens"] - used_tokens,
            "continue_final_message": True, "add_generation_prompt": False}  # fmt: skip


@dataclass(slots=True)
class Streamed:
    pieces: list[str] = field(default_factory=list)  # the text of each chunk that had some
    ended: str = "clean"  # done, broken: ..., clean, or the error event's text
    killed_at: int | None = None  # chunks with text seen when the server was killed
    usage: dict[str, Any] | None = None  # the usage chunk's (``stream_options.include_usage``)

    @property
    def text(self) -> str:
        return "".join(self.pieces)


def _delta(event: dict[str, Any]) -> str:
    choices = event.get("choices") or [{}]
    delta = choices[0].get("delta") or {}
    text = delta.get("content")
    return text if isinstance(text, str) else ""


async def stream_text(
    http: httpx.AsyncClient,
    url: str,
    body: dict[str, Any],
    *,
    kill_after: int | None = None,
    proc: subprocess.Popen[bytes] | None = None,
) -> Streamed:
    """Stream ``body`` from ``url``; kill ``proc`` after ``kill_after`` chunks with text."""
    out = Streamed()
    try:
        async with http.stream("POST", url + CHAT, json=body) as response:
            response.raise_for_status()
            async for line in response.aiter_lines():
                if line == "data: [DONE]":
                    out.ended = "done"
                    continue
                if not line.startswith("data: "):
                    continue
                event = orjson.loads(line[6:])
                if "error" in event:
                    out.ended = str(event["error"])
                    continue
                if isinstance(event.get("usage"), dict):
                    out.usage = event["usage"]
                piece = _delta(event)
                if piece:
                    out.pieces.append(piece)
                if kill_after is not None and proc is not None and len(out.pieces) == kill_after:
                    kill(proc)
                    out.killed_at = len(out.pieces)
    except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
        out.ended = f"broken: {type(exc).__name__}"
    return out
