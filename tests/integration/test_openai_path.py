"""The OpenAI-compatible path, driven by the real openai SDK through the gateway."""

from __future__ import annotations

import openai
import pytest

from loadtests.kit.fake_upstream import FakeLog

MESSAGES = [{"role": "user", "content": "hello"}]


def test_chat_non_streaming_rewrites_model_both_ways(
    client: openai.OpenAI, fake_log: FakeLog
) -> None:
    raw = client.chat.completions.with_raw_response.create(
        model="fast", messages=MESSAGES, max_tokens=3
    )
    completion = raw.parse()
    assert completion.model == "fast"
    assert completion.choices[0].message.content == " tok0 tok1 tok2"
    assert completion.usage is not None
    assert completion.usage.completion_tokens == 3
    assert fake_log.bodies[-1]["model"] == "fake-model"
    assert raw.headers["x-gateway-pool"] == "small"
    assert raw.headers["x-gateway-backend"] == "small-0"
    assert len(raw.headers["x-gateway-request-id"]) == 32


def test_chat_streaming_relays_every_event(client: openai.OpenAI) -> None:
    stream = client.chat.completions.create(
        model="fast",
        messages=MESSAGES,
        max_tokens=4,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == " tok0 tok1 tok2 tok3"
    assert {c.model for c in chunks} == {"fast"}
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens == 4


def test_streaming_without_usage_has_no_usage_chunk(client: openai.OpenAI) -> None:
    chunks = list(client.chat.completions.create(model="fast", messages=MESSAGES, stream=True))
    assert all(c.usage is None for c in chunks)
    assert all(c.choices for c in chunks)


def test_completions_streaming_and_not(client: openai.OpenAI) -> None:
    whole = client.completions.create(model="fast", prompt="Once", max_tokens=2)
    assert whole.model == "fast"
    assert whole.choices[0].text == " tok0 tok1"
    parts = list(client.completions.create(model="fast", prompt="Once", max_tokens=2, stream=True))
    assert "".join(p.choices[0].text for p in parts) == " tok0 tok1"


def test_unknown_fields_pass_through(client: openai.OpenAI, fake_log: FakeLog) -> None:
    client.chat.completions.create(
        model="fast", messages=MESSAGES, extra_body={"top_k": 5, "repetition_penalty": 1.1}
    )
    assert fake_log.bodies[-1]["top_k"] == 5
    assert fake_log.bodies[-1]["repetition_penalty"] == 1.1


def test_client_authorization_is_not_forwarded(client: openai.OpenAI, fake_log: FakeLog) -> None:
    client.chat.completions.create(model="fast", messages=MESSAGES)
    assert "authorization" not in fake_log.headers[-1]


def test_models_lists_public_names(client: openai.OpenAI) -> None:
    assert sorted(m.id for m in client.models.list()) == ["auto", "fast"]


def test_auto_uses_default_pool(client: openai.OpenAI) -> None:
    raw = client.chat.completions.with_raw_response.create(model="auto", messages=MESSAGES)
    assert raw.parse().model == "auto"
    assert raw.headers["x-gateway-route-reason"].startswith("auto:default;len=short;diff=")


def test_unknown_model_is_404_listing_models(client: openai.OpenAI) -> None:
    with pytest.raises(openai.NotFoundError) as info:
        client.chat.completions.create(model="gpt-9", messages=MESSAGES)
    assert "auto, fast" in info.value.message
    assert info.value.code == "model_not_found"


def test_missing_field_is_400_naming_it(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model="fast", messages=[])
    assert "messages" in info.value.message
    body = info.value.body
    assert isinstance(body, dict)
    assert body["param"] == "messages"


def test_upstream_500_is_502_in_the_gateways_own_words(client: openai.OpenAI) -> None:
    with pytest.raises(openai.InternalServerError) as info:
        client.chat.completions.create(
            model="fast", messages=MESSAGES, extra_body={"fake": {"status": 500, "body": "boom"}}
        )
    assert info.value.status_code == 502
    assert "Backend 'small-0' answered HTTP 500." in info.value.message
    assert "boom" not in info.value.message  # a server fault's text stays with the server


def test_upstream_400_keeps_its_status_and_message(client: openai.OpenAI) -> None:
    upstream_error = (
        '{"object":"error","message":"context too long","type":"BadRequestError","code":400}'
    )
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(
            model="fast",
            messages=MESSAGES,
            extra_body={"fake": {"status": 400, "body": upstream_error}},
        )
    assert "context too long" in info.value.message


@pytest.mark.parametrize(
    "fake",
    [{"break_after": 2}, {"bad_json_after": 1}, {"no_done": True}],
    ids=["dropped", "bad-json", "no-done"],
)
def test_error_after_stream_began_ends_with_error_event(
    client: openai.OpenAI, fake: dict[str, object]
) -> None:
    stream = client.chat.completions.create(
        model="fast", messages=MESSAGES, stream=True, extra_body={"fake": fake}
    )
    with pytest.raises(openai.APIError) as info:
        list(stream)
    assert "small-0" in info.value.message
