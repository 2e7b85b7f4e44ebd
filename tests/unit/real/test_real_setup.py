"""The pure parts of the real-backend set-up and calibration: where the cache is, the
servers' command lines and the comparison table."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadtests.calibration.table import markdown
from loadtests.real.cache import cache_root, is_done, mark_done
from loadtests.real.llamacpp import CMAKE_OPTIONS, ServeOptions, server_argv
from loadtests.real.prompts import NONCE_WORDS, filler
from loadtests.real.vllm_cpu import VllmOptions
from loadtests.real.vllm_cpu import server_argv as vllm_argv
from loadtests.sim.tokenizer import count_tokens


def test_cache_root_follows_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("LATENCY_GATEWAY_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_root() == tmp_path / "latency-gateway"
    monkeypatch.setenv("LATENCY_GATEWAY_CACHE", str(tmp_path / "x"))
    assert cache_root() == tmp_path / "x"


def test_a_step_is_done_only_with_its_stamp(tmp_path: Path) -> None:
    built = tmp_path / "llama-server"
    built.write_text("half a binary")
    assert not is_done(built)
    mark_done(built)
    assert is_done(built)


def test_llamacpp_build_and_command_line() -> None:
    assert "-DGGML_NATIVE=OFF" in CMAKE_OPTIONS  # a native build crashes on AMX CPUs
    argv = server_argv(
        Path("/b/llama-server"), Path("/m.gguf"), Path("/t.jinja"), ServeOptions(9, "g")
    )
    joined = " ".join(argv)
    assert "--metrics --slots -np 4 -t 2 -c 8192" in joined
    assert "--chat-template-file /t.jinja -a g" in joined


def test_vllm_command_line() -> None:
    argv = vllm_argv(Path("/py"), Path("/hf"), Path("/t"), VllmOptions(9, "g", max_num_seqs=4))
    assert argv[:3] == ["/py", "-m", "vllm.entrypoints.openai.api_server"]
    assert "--enable-prefix-caching" in argv
    assert argv[-2:] == ["--max-num-seqs", "4"]


def test_filler_is_one_short_word_per_token_after_a_nonce() -> None:
    text = filler(12)
    assert len(text.split()) == NONCE_WORDS + 12
    assert all(len(w) <= 5 for w in text.split())
    assert count_tokens(text) == NONCE_WORDS + 12  # the simulator counts what Gemma counts
    assert text.endswith(filler(12, nonce=False))
    assert filler(5, nonce=False) == filler(5, nonce=False)
    assert len({filler(5) for _ in range(50)}) == 50


def cell(name: str, tokens: int, c: int, ttft: float, tpot: float) -> dict[str, object]:
    return {
        "name": name,
        "length": tokens,
        "concurrency": c,
        "prefix_hit": False,
        "prompt_tokens": tokens,
        "ttft_p50_s": ttft,
        "tpot_p50_s": tpot,
    }


def test_table_reports_errors_and_the_verdict() -> None:
    real = [cell("a", 10, 1, 0.100, 0.050)]
    table = markdown(real, [cell("a", 10, 1, 0.110, 0.041)])
    assert "| a | 10 | 100 | 110 | +10% | 50.0 | 41.0 | -18% |" in table
    assert "(within 20%)" in table
    assert "NOT within" in markdown(real, [cell("a", 10, 1, 0.2, 0.05)])
