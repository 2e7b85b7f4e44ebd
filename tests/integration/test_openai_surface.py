"""Embeddings, the Responses API, model retrieval and vLLM's own routes, driven by the real
openai SDK (or plain HTTP for the routes the SDK has no call for) through a real gateway in
front of a simulated vLLM replica."""

from __future__ import annotations

from collections.abc import Iterator

import httpx2 as httpx
import openai
import pytest

from loadtests.kit.fake_upstream import FakeConfig, FakeLog, build_fake
from loadtests.sim import tokenizer
from loadtests.sim.vllm_extras import EMBEDDING_DIM, embedding
from tests.integration.conftest import GatewayFactory
from tests.support.policies import single_pool
from tests.support.servers import serve
from tests.support.sim_replica import SERVED, SimReplica, sim_replica

ROUTES = "    extra_routes: [tokenize, detokenize, rerank, score]\n"


@pytest.fixture
def sim() -> Iterator[SimReplica]:
    with sim_replica() as replica:
        yield replica


@pytest.fixture
def sim_gateway(sim: SimReplica, start_gateway: GatewayFactory) -> Iterator[str]:
    # The simulated replica is a real process: on a busy machine its health answer may take
    # longer than the default probe timeout, which would leave the pool without a backend.
    policy = single_pool(sim.url, served=SERVED, extra="health: {timeout_s: 30}\n").replace(
        "    max_inflight: 32\n", f"    max_inflight: 32\n{ROUTES}"
    )
    with start_gateway(policy) as url:
        yield url


@pytest.fixture
def sdk(sim_gateway: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=sim_gateway + "/v1", api_key="unused", max_retries=0, timeout=20)


# Without encoding_format the SDK asks for base64 and decodes it itself.
@pytest.mark.parametrize("encoding", [{}, {"encoding_format": "float"}], ids=["base64", "float"])
def test_embeddings(sdk: openai.OpenAI, encoding: dict[str, str]) -> None:
    texts = ["the cache is fast", "a slow queue", "the cache is fast"]
    raw = sdk.embeddings.with_raw_response.create(model="fast", input=texts, **encoding)  # type: ignore[arg-type]
    result = raw.parse()
    assert result.model == "fast"
    assert raw.headers["x-gateway-cache"] == "bypass"
    assert [d.index for d in result.data] == [0, 1, 2]
    vectors = [d.embedding for d in result.data]
    assert all(len(v) == EMBEDDING_DIM for v in vectors)
    assert vectors[0] == vectors[2] != vectors[1]
    assert vectors[1] == pytest.approx(embedding(texts[1]), rel=1e-6)
    tokens = sum(tokenizer.count_tokens(t) for t in texts)
    assert result.usage.prompt_tokens == tokens


def test_embeddings_refused_clearly(sdk: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        sdk.embeddings.create(model="fast", input=[])
    assert "input" in str(caught.value)


def test_responses_non_streaming(sdk: openai.OpenAI) -> None:
    raw = sdk.responses.with_raw_response.create(
        model="fast",
        input="Name three colours.",
        max_output_tokens=12,
        extra_body={"ignore_eos": True},
    )
    response = raw.parse()
    assert response.model == "fast"
    assert response.status == "incomplete"  # max_output_tokens reached
    assert response.usage is not None
    assert response.usage.output_tokens == 12
    assert response.output_text
    assert raw.headers["x-gateway-pool"] == "small"
    assert raw.headers["x-gateway-cache"] == "bypass"


def test_responses_streaming_relays_typed_events(sdk: openai.OpenAI) -> None:
    stream = sdk.responses.create(
        model="fast",
        instructions="Be brief.",
        input=[{"role": "user", "content": "Say something."}],
        max_output_tokens=16,
        stream=True,
    )
    events = list(stream)
    kinds = [e.type for e in events]
    assert kinds[:4] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
    ]
    assert kinds[-1] in ("response.completed", "response.incomplete")
    assert [e.sequence_number for e in events] == list(range(len(events)))
    deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    final = events[-1].response  # type: ignore[union-attr]
    assert final.output_text == deltas != ""
    assert final.model == "fast"
    assert events[0].response.model == "fast"  # type: ignore[union-attr]
    assert final.usage is not None
    assert 0 < final.usage.output_tokens <= 16


def test_responses_stream_keeps_event_lines_and_has_no_done(sim_gateway: str) -> None:
    body = {"model": "fast", "input": "hi", "max_output_tokens": 4, "stream": True}
    with httpx.stream("POST", sim_gateway + "/v1/responses", json=body, timeout=20) as reply:
        text = b"".join(reply.iter_bytes()).decode()
    frames = [f for f in text.split("\n\n") if f]
    assert all(f.startswith("event: response.") for f in frames), frames[:3]
    assert all(f.split("\n")[1].startswith("data: {") for f in frames)
    assert "[DONE]" not in text
    assert SERVED not in text  # the backend's model name never reaches the client


def test_cancelled_responses_stream_aborts_the_backend(sdk: openai.OpenAI, sim: SimReplica) -> None:
    engine = sim.replica.engine
    stream = sdk.responses.create(
        model="fast",
        input="Write a very long story.",
        max_output_tokens=20_000,  # minutes of decoding: only an abort ends it in time
        stream=True,
        extra_body={"ignore_eos": True},
    )
    for event in stream:
        if event.type == "response.output_text.delta":
            break
    assert engine.counters.aborts == 0
    stream.close()
    sim.wait_until(lambda: engine.counters.aborts == 1)
    sim.wait_until(lambda: engine.num_running + engine.num_waiting == 0)


def test_models_retrieve(sdk: openai.OpenAI) -> None:
    model = sdk.models.retrieve("fast")
    assert (model.id, model.object, model.owned_by) == ("fast", "model", "gateway")
    with pytest.raises(openai.NotFoundError) as caught:
        sdk.models.retrieve("no-such-model")
    assert "no-such-model" in str(caught.value)


def test_vllm_routes_pass_through(sim_gateway: str) -> None:
    post = httpx.Client(base_url=sim_gateway, timeout=20).post
    tokens = post("/tokenize", json={"model": "fast", "prompt": " the cache"}).json()
    assert tokens["count"] == 2
    assert tokens["tokens"] == tokenizer.encode(" the cache")
    text = post("/detokenize", json={"model": "fast", "tokens": tokens["tokens"]}).json()
    assert text == {"prompt": " the cache"}
    docs = ["a queue of requests", "the cache is fast", "nothing here"]
    rerank = post(
        "/v1/rerank", json={"model": "fast", "query": "is the cache fast", "documents": docs}
    )
    assert rerank.status_code == 200
    assert rerank.json()["model"] == "fast"
    assert [r["index"] for r in rerank.json()["results"]] == [1, 0, 2]
    score = post(
        "/v1/score", json={"model": "fast", "text_1": "fast cache", "text_2": ["cache", "q"]}
    )
    assert [d["score"] for d in score.json()["data"]] == [0.5, 0.0]
    assert score.headers["x-gateway-backend"] == "small-0"


def test_vllm_routes_refused_where_not_declared(
    sim: SimReplica, start_gateway: GatewayFactory
) -> None:
    with start_gateway(single_pool(sim.url, served=SERVED)) as url:
        reply = httpx.post(url + "/tokenize", json={"model": "fast", "prompt": "hi"}, timeout=20)
    assert reply.status_code == 404
    error = reply.json()["error"]
    assert error["code"] == "route_not_served"
    assert "extra_routes" in error["message"]
    assert "/tokenize" in error["message"]


def test_responses_and_embeddings_retry_on_another_replica(
    sim: SimReplica, start_gateway: GatewayFactory
) -> None:
    log = FakeLog()
    with serve(build_fake(FakeConfig(fail_status=503), log)) as broken:
        policy = f"""
backends:
  - {{name: broken, url: {broken}, engine: vllm, model: {SERVED}, pool: small}}
  - {{name: sim, url: {sim.url}, engine: vllm, model: {SERVED}, pool: small}}
models:
  fast: {{pool: small}}
pools:
  small:
    retry: {{attempts: 2, backoff_initial_s: 0.001, backoff_max_s: 0.001, jitter_s: 0}}
    breaker: {{consecutive_failures: 100}}
# Every failure here may retry: the scheduler may pick the broken replica for most of the
# twelve requests, more than the default budget (10% of requests + 0.5/s) lets retry.
retry_budget: {{ratio: 1.0}}
"""
        with start_gateway(policy) as url:
            sdk = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0, timeout=20)
            for _ in range(6):
                assert (
                    sdk.responses.create(model="fast", input="hi", max_output_tokens=2).model
                    == "fast"
                )
                assert sdk.embeddings.create(model="fast", input="hi").data
    assert log.bodies, "the broken replica was never tried: nothing was retried"
    assert {b["model"] for b in log.bodies} == {SERVED}
