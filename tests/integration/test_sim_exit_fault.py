"""A simulated replica whose fault is to die with its process (``--death-mode exit``): the
client's stream breaks after the replica's tokens, without ``[DONE]``, and the simulator
process is gone with the fault's exit status, as a crashed engine would be."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx2 as httpx
import orjson

from gateway.children import running
from loadtests.kit.ports import free_port
from loadtests.sim.faults import EXIT_STATUS


def test_a_replica_dies_with_its_process_mid_stream(tmp_path: Path) -> None:
    port = free_port()
    argv = [sys.executable, "-m", "loadtests.sim", "--profile", "qwen2.5-1.5b-h100",
            "--port", str(port), "--death-rate", "1", "--death-after", "3",
            "--death-mode", "exit"]  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    body = {"model": "Qwen/Qwen2.5-1.5B-Instruct", "stream": True, "max_tokens": 20,
            "messages": [{"role": "user", "content": "hi"}]}  # fmt: skip
    pieces: list[str] = []
    with running(argv, [url + "/health"], tmp_path / "sim.log", timeout_s=60) as proc:
        with (
            httpx.Client(timeout=30) as http,
            http.stream("POST", url + "/v1/chat/completions", json=body) as response,
        ):
            try:
                for line in response.iter_lines():
                    assert line != "data: [DONE]"
                    if line.startswith("data: {"):
                        delta = orjson.loads(line[6:])["choices"][0]["delta"]
                        if delta.get("content"):
                            pieces.append(delta["content"])
            except httpx.RemoteProtocolError:
                pass
        assert proc.wait(timeout=30) == EXIT_STATUS
    assert len(pieces) == 3
