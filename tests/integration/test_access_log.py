"""The JSON access line per request, and the latency histograms by pool and length class."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx2 as httpx
import openai
import orjson
import pytest

from gateway.access_log import ACCESS_LOGGER
from loadtests.kit.ports import free_port
from tests.support.policies import single_pool
from tests.support.processes import gateway_process, read_until

SECRET_PROMPT = "my secret prompt text 7d1f"


def _lines(caplog: pytest.LogCaptureFixture) -> list[dict[str, object]]:
    return [orjson.loads(r.getMessage()) for r in caplog.records if r.name == ACCESS_LOGGER]


def test_one_line_per_request_without_prompt_or_key(
    gateway: str, client: openai.OpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=ACCESS_LOGGER)
    messages = [{"role": "user", "content": SECRET_PROMPT}]
    client.chat.completions.create(model="fast", messages=messages)  # type: ignore[arg-type]
    stream = client.chat.completions.create(
        model="fast",
        messages=messages,  # type: ignore[arg-type]
        stream=True,
        stream_options={"include_usage": True},
    )
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="nope", messages=messages)  # type: ignore[arg-type]

    whole, streamed, refused = _lines(caplog)
    for line in (whole, streamed):
        assert line["status"] == 200
        assert line["pool"] == "small"
        assert line["backend"] == "small-0"
        assert line["model"] == "fast"
        assert isinstance(line["ttft_ms"], float)
        assert isinstance(line["queue_ms"], float)
        assert line["tokens_out"] == 5  # the fake upstream's five tokens
        assert line["error"] is None
    assert (whole["stream"], streamed["stream"]) == (False, True)
    # The TTFT predictor's view: both were predicted; only a stream shows its first token.
    for line in (whole, streamed):
        assert isinstance(line["ttft_predicted_ms"], float)
        assert isinstance(line["ttft_supported"], bool)  # resting on observations or a prior
        assert set(line["ttft_inputs"]) >= {"uncached_tokens", "pending", "decoding"}
    assert whole["ttft_backend_ms"] is None
    assert isinstance(streamed["ttft_backend_ms"], float)
    assert streamed["tokens_in"] is not None  # from the usage chunk
    assert refused["status"] == 404
    assert refused["error"] == "model_not_found"
    assert refused["backend"] is None
    assert len({whole["id"], streamed["id"], refused["id"]}) == 3
    text = caplog.text
    assert SECRET_PROMPT not in text
    assert "unused" not in text  # the client's API key


def test_latency_histograms_by_length_class(gateway: str, client: openai.OpenAI) -> None:
    long_text = "word " * 3000  # ~3.7k estimated tokens: medium under the default thresholds
    for content in ("hi", long_text):
        stream = client.chat.completions.create(
            model="fast", messages=[{"role": "user", "content": content}], stream=True
        )
        for _ in stream:
            pass
    metrics = httpx.get(gateway + "/metrics").text
    for length in ("short", "medium"):
        labels = f'cache="bypass",length="{length}",pool="small"'
        assert f"gateway_time_to_first_token_seconds_count{{{labels}}} 1.0" in metrics
        assert f"gateway_request_duration_seconds_count{{{labels}}} 1.0" in metrics
        tpot = f'length="{length}",pool="small"'
        assert f"gateway_time_per_output_token_seconds_count{{{tpot}}} 1.0" in metrics


def test_serve_prints_access_lines_on_stdout(upstream: str, tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(single_pool(upstream))
    port = free_port()
    with gateway_process(["serve", "--policy", str(path), "--port", str(port)]) as proc:
        read_until(proc, "Uvicorn running on")
        base = f"http://127.0.0.1:{port}"
        body = {"model": "fast", "messages": [{"role": "user", "content": SECRET_PROMPT}]}
        assert httpx.post(base + "/v1/chat/completions", json=body).status_code == 200
        line = read_until(proc, '"status":200')
    fields = orjson.loads(line)
    assert (fields["model"], fields["backend"], fields["tokens_out"]) == ("fast", "small-0", 5)
    assert SECRET_PROMPT not in line
