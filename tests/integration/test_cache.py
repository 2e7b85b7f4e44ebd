"""The response cache end to end: the real openai SDK, a real gateway, the real embedding model."""

from __future__ import annotations

from collections.abc import Iterator

import httpx2 as httpx
import openai
import pytest

from gateway.app import build_app
from gateway.policy import load_policy_text
from gateway.runtime.parts import Gateway
from loadtests.kit.fake_upstream import FakeConfig, FakeLog, build_fake
from loadtests.kit.serving import Served, serve, serve_app
from tests.support.policies import single_pool

# The embedding model is a real process's work: on a busy machine it may take far longer
# than the default wait, which would turn these lookups into misses.
CACHE = """
cache:
  enabled: true
  # A bound at which paraphrases are served (at the default, 0.02, none is).
  semantic: {embed_timeout_s: 60, verifier: features, max_false_hit_rate: 0.1}
"""


@pytest.fixture
def stop_upstream(fake_log: FakeLog) -> Iterator[str]:
    config = FakeConfig(model="fake-model", ttft_s=0.001, tokens=6, itl_s=0.0, finish_reason="stop")
    with serve(build_fake(config, fake_log)) as url:
        yield url


@pytest.fixture
def cached(stop_upstream: str) -> Iterator[tuple[Served, Gateway]]:
    app = build_app(load_policy_text(single_pool(stop_upstream, extra=CACHE, inflight=1)))
    gateway: Gateway = app.state.gateway
    with serve_app(app) as served:
        assert served.call(gateway.caches.ready, timeout=120)
        yield served, gateway


@pytest.fixture
def sdk(cached: tuple[Served, Gateway]) -> openai.OpenAI:
    return openai.OpenAI(base_url=cached[0].url + "/v1", api_key="k", max_retries=0, timeout=30)


def _settled(cached: tuple[Served, Gateway]) -> None:
    served, gateway = cached
    served.call(gateway.caches.ready, timeout=30)


def _ask(sdk: openai.OpenAI, text: str, **kw: object) -> tuple[str, str, str]:
    raw = sdk.chat.completions.with_raw_response.create(
        model="fast",
        messages=[{"role": "user", "content": text}],
        temperature=0,
        **kw,  # type: ignore[arg-type]
    )
    completion = raw.parse()
    return (
        raw.headers["x-gateway-cache"],
        completion.choices[0].message.content or "",
        completion.id,
    )


def test_miss_then_exact_then_semantic_and_the_guard(
    sdk: openai.OpenAI, cached: tuple[Served, Gateway], fake_log: FakeLog
) -> None:
    status, first, first_id = _ask(sdk, "How do I reset my password?")
    assert status == "miss"
    _settled(cached)
    status, again, again_id = _ask(sdk, "How do I reset my password?")
    assert (status, again) == ("exact", first)
    assert again_id != first_id  # a fresh id, as from a live answer
    status, _, _ = _ask(sdk, "How can I reset my password?")
    assert status == "semantic"
    status, _, _ = _ask(sdk, "How do I not reset my password?")
    assert status == "miss"  # the guard refuses a negated question
    assert len(fake_log.bodies) == 2
    metrics = httpx.get(cached[0].url + "/metrics").text
    assert 'gateway_cache_lookups_total{result="semantic"} 1.0' in metrics
    assert 'gateway_cache_guard_refusals_total{reason="negation"} 1.0' in metrics
    # Hits are finished requests too, told apart by their cache label (no pool, no backend).
    for cache, count in (("exact", 1), ("semantic", 1)):
        hit = f'backend="none",cache="{cache}",model="fast",pool="none",status="200"'
        assert f"gateway_requests_total{{{hit}}} {count}.0" in metrics
        assert f'gateway_time_to_first_token_seconds_count{{cache="{cache}",' in metrics
        assert f'gateway_request_duration_seconds_count{{cache="{cache}",' in metrics
    served = 'backend="small-0",cache="miss",model="fast",pool="small",status="200"'
    assert f"gateway_requests_total{{{served}}} 2.0" in metrics
    # Embedded: the first question, the semantic hit and the negated one (not the exact hit).
    assert "gateway_embedding_wait_seconds_count 3.0" in metrics


def test_errors_and_completions_say_what_the_cache_did(
    sdk: openai.OpenAI, cached: tuple[Served, Gateway]
) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        sdk.chat.completions.create(model="fast", messages=[])
    assert caught.value.response.headers["x-gateway-cache"] == "bypass"
    first = sdk.completions.with_raw_response.create(
        model="fast", prompt="Once upon a time", temperature=0
    )
    assert first.headers["x-gateway-cache"] == "miss"
    _settled(cached)
    again = sdk.completions.with_raw_response.create(
        model="fast", prompt="Once upon a time", temperature=0
    )
    assert again.headers["x-gateway-cache"] == "exact"
    assert again.parse().choices[0].text == first.parse().choices[0].text


def test_streaming_hit_is_a_well_formed_stream(
    sdk: openai.OpenAI, cached: tuple[Served, Gateway]
) -> None:
    _ask(sdk, "What is a KV cache?")
    _settled(cached)
    raw = sdk.chat.completions.with_raw_response.create(
        model="fast",
        messages=[{"role": "user", "content": "What is a KV cache?"}],
        temperature=0,
        stream=True,
        stream_options={"include_usage": True},
    )
    assert raw.headers["x-gateway-cache"] == "exact"
    chunks = list(raw.parse())
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == " tok0 tok1 tok2 tok3 tok4 tok5"
    assert {c.model for c in chunks} == {"fast"}
    assert len({c.id for c in chunks}) == 1
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    usage = chunks[-1].usage
    assert usage is not None
    assert usage.completion_tokens == 6


def test_a_streamed_answer_is_stored_and_served_whole(
    sdk: openai.OpenAI, cached: tuple[Served, Gateway]
) -> None:
    stream = sdk.chat.completions.create(
        model="fast",
        messages=[{"role": "user", "content": "Explain prefix caching."}],
        temperature=0,
        stream=True,
    )
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    _settled(cached)
    status, text, _ = _ask(sdk, "Explain prefix caching.")
    assert (status, text) == ("exact", " tok0 tok1 tok2 tok3 tok4 tok5")


def test_bypass_refresh_and_nondeterministic_requests(
    sdk: openai.OpenAI, cached: tuple[Served, Gateway], fake_log: FakeLog
) -> None:
    question = "What are the opening hours of the library?"
    _ask(sdk, question)
    _settled(cached)
    bypass = {"x-gateway-cache": "bypass"}
    assert _ask(sdk, question, extra_headers=bypass)[0] == "bypass"
    assert _ask(sdk, question, extra_headers={"x-gateway-cache": "refresh"})[0] == "miss"
    raw = sdk.chat.completions.with_raw_response.create(
        model="fast", messages=[{"role": "user", "content": question}]
    )
    assert raw.headers["x-gateway-cache"] == "bypass"  # temperature defaults to 1
    assert len(fake_log.bodies) == 4


def test_truncated_answers_are_not_stored(
    sdk: openai.OpenAI, cached: tuple[Served, Gateway]
) -> None:
    truncated = {"extra_body": {"fake": {"finish_reason": "length"}}}
    assert _ask(sdk, "Write a long poem about the sea.", **truncated)[0] == "miss"
    _settled(cached)
    assert _ask(sdk, "Write a long poem about the sea.", **truncated)[0] == "miss"


def test_a_hit_needs_no_admission_slot(
    sdk: openai.OpenAI, cached: tuple[Served, Gateway], fake_log: FakeLog
) -> None:
    _ask(sdk, "Which port does the service listen on?")
    _settled(cached)
    fake_log.arrived.clear()
    with httpx.Client(base_url=cached[0].url, timeout=30) as client:
        body = {
            "model": "fast",
            "messages": [{"role": "user", "content": "hang"}],
            "stream": True,
            # A first token (the client's head goes out with it), then silence.
            "fake": {"tokens": 3, "itl_s": 60},
        }
        # Holds the pool's only slot (max_inflight 1) while the hit is asked for.
        with client.stream("POST", "/v1/chat/completions", json=body):
            assert fake_log.arrived.wait(10)
            assert _ask(sdk, "Which port does the service listen on?")[0] == "exact"


FALLBACK = """
backends:
  - {name: large-0, url: "LARGE", model: fake-model, pool: large}
  - {name: small-0, url: "SMALL", model: fake-model, pool: small}
models:
  smart: {pool: large}
pools:
  large: {fallback: [small]}
cache:
  enabled: true
  semantic: {enabled: false}
"""


def test_an_answer_from_a_degraded_pool_is_not_stored() -> None:
    """The cache key names the planned pool: a fallback pool's answer served once must not
    come back later as if the planned pool had given it."""
    broken = FakeConfig(model="fake-model", ttft_s=0.0, tokens=2, fail_status=503)
    fine = FakeConfig(model="fake-model", ttft_s=0.0, tokens=2, finish_reason="stop")
    body = {"model": "smart", "messages": [{"role": "user", "content": "hi"}], "temperature": 0}
    with serve(build_fake(broken, FakeLog())) as large, serve(build_fake(fine, FakeLog())) as small:
        policy = FALLBACK.replace("LARGE", large).replace("SMALL", small)
        app = build_app(load_policy_text(policy))
        with serve_app(app) as served, httpx.Client(base_url=served.url, timeout=30) as http:
            first = http.post("/v1/chat/completions", json=body)
            served.call(app.state.gateway.caches.ready, timeout=30)
            again = http.post("/v1/chat/completions", json=body)
    for answer in (first, again):
        assert answer.status_code == 200, answer.text
        assert (answer.headers["x-gateway-degraded"], answer.headers["x-gateway-pool"]) == (
            "1",
            "small",
        )
        assert answer.headers["x-gateway-cache"] == "miss"


def test_the_default_rules_load_the_cross_encoder_and_keep_the_bound(stop_upstream: str) -> None:
    # cache on, every semantic setting at its default: the cross-encoder loads in the
    # background; at the 0.02 bound no threshold passes, so a paraphrase misses.
    extra = "cache:\n  enabled: true\n  semantic: {embed_timeout_s: 60}\n"
    app = build_app(load_policy_text(single_pool(stop_upstream, extra=extra, inflight=1)))
    gateway: Gateway = app.state.gateway
    with serve_app(app) as served:
        assert served.call(gateway.caches.ready, timeout=120)
        client = openai.OpenAI(base_url=served.url + "/v1", api_key="k", max_retries=0)
        assert _ask(client, "How do I reset my password?")[0] == "miss"
        served.call(gateway.caches.ready, timeout=60)
        cache = gateway.caches.cache
        assert cache is not None
        served.call(cache.settle, timeout=120)  # the rules are in
        rules = cache._rules
        assert rules is not None
        assert rules.check is not None
        assert _ask(client, "How can I reset my password?")[0] == "miss"
        assert _ask(client, "How do I reset my password?")[0] == "exact"
