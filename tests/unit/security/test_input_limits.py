import pytest

from gateway.errors import InvalidRequest
from gateway.openai.parse import parse_request
from gateway.schema import InputLimits
from gateway.security.input_limits import apply_input_limits


def _chat(**fields: object) -> bytes:
    import orjson

    body = {"model": "fast", "messages": [{"role": "user", "content": "hi"}], **fields}
    return orjson.dumps(body)


def _refused(raw: bytes, limits: InputLimits, endpoint: str = "chat") -> InvalidRequest:
    with pytest.raises(InvalidRequest) as refused:
        apply_input_limits(parse_request(endpoint, raw), limits)  # type: ignore[arg-type]
    assert refused.value.http_status() == 400
    return refused.value


def test_too_many_messages() -> None:
    messages = [{"role": "user", "content": "x"}] * 3
    error = _refused(_chat(messages=messages), InputLimits(max_messages=2))
    assert (error.param, error.code) == ("messages", "too_many_messages")


def test_characters_per_message_counts_structured_text_parts() -> None:
    content = [{"type": "text", "text": "a" * 6}, {"type": "text", "text": "b" * 6}]
    messages = [{"role": "user", "content": "ok"}, {"role": "user", "content": content}]
    error = _refused(_chat(messages=messages), InputLimits(max_message_chars=10))
    assert (error.param, error.code) == ("messages[1].content", "message_too_long")


def test_completion_prompt_chars() -> None:
    raw = b'{"model": "fast", "prompt": ["abc", "defgh"]}'
    error = _refused(raw, InputLimits(max_prompt_chars=7), "completions")
    assert error.code == "prompt_too_long"


@pytest.mark.parametrize(
    ("endpoint", "raw"),
    [
        ("embeddings", b'{"model": "e", "input": ["abcd", "efgh"]}'),
        ("embeddings", b'{"model": "e", "input": [1, 2, 3]}'),  # token ids: 4 characters each
        ("responses", b'{"model": "r", "instructions": "abcd", "input": "efgh"}'),
        ("responses", b'{"model": "r", "input": [{"role": "user", "content": "abcdefgh"}]}'),
    ],
)
def test_input_chars(endpoint: str, raw: bytes) -> None:
    error = _refused(raw, InputLimits(max_prompt_chars=7), endpoint)
    assert (error.param, error.code) == ("input", "prompt_too_long")
    assert apply_input_limits(parse_request(endpoint, raw), InputLimits(max_prompt_chars=12))  # type: ignore[arg-type]


def test_n_limit() -> None:
    error = _refused(_chat(n=3), InputLimits(max_n=2))
    assert (error.param, error.code) == ("n", "n_too_large")


def test_max_tokens_refused_or_clamped() -> None:
    error = _refused(_chat(max_tokens=500), InputLimits(max_tokens=100))
    assert (error.param, error.code) == ("max_tokens", "max_tokens_too_large")
    parsed = parse_request("chat", _chat(max_tokens=500, max_completion_tokens=50))
    clamped = apply_input_limits(parsed, InputLimits(max_tokens=100, max_tokens_action="clamp"))
    assert clamped.body["max_tokens"] == 100
    assert clamped.body["max_completion_tokens"] == 50
    assert parsed.body["max_tokens"] == 500  # the parsed original is left alone


def test_requests_within_limits_pass_unchanged() -> None:
    parsed = parse_request("chat", _chat(max_tokens=10, n=1))
    assert apply_input_limits(parsed, InputLimits(max_tokens=100)) is parsed


def test_integral_floats_count_as_the_integers_they_are() -> None:
    error = _refused(_chat(n=87.0), InputLimits(max_n=8))
    assert error.code == "n_too_large"
    error = _refused(_chat(max_tokens=500.0), InputLimits(max_tokens=100))
    assert error.code == "max_tokens_too_large"
    parsed = parse_request("chat", _chat(max_completion_tokens=500.0))
    clamped = apply_input_limits(parsed, InputLimits(max_tokens=100, max_tokens_action="clamp"))
    assert clamped.body["max_completion_tokens"] == 100
    within = parse_request("chat", _chat(n=8.0, max_tokens=100.0))
    assert apply_input_limits(within, InputLimits(max_n=8, max_tokens=100)) is within


def test_the_token_cap_covers_the_responses_api() -> None:
    raw = b'{"model": "r", "input": "hi", "max_output_tokens": 500}'
    error = _refused(raw, InputLimits(max_tokens=100), "responses")
    assert (error.param, error.code) == ("max_output_tokens", "max_tokens_too_large")
    parsed = parse_request("responses", raw)
    clamped = apply_input_limits(parsed, InputLimits(max_tokens=100, max_tokens_action="clamp"))
    assert clamped.body["max_output_tokens"] == 100


def test_n_is_checked_where_the_api_has_it() -> None:
    error = _refused(b'{"model": "m", "prompt": "x", "n": 3}', InputLimits(max_n=2), "completions")
    assert error.code == "n_too_large"
    # Embeddings and the Responses API have no n: an unknown field there, passed through.
    for endpoint, raw in (
        ("embeddings", b'{"model": "e", "input": "x", "n": 3}'),
        ("responses", b'{"model": "r", "input": "x", "n": 3}'),
    ):
        parsed = parse_request(endpoint, raw)  # type: ignore[arg-type]
        assert apply_input_limits(parsed, InputLimits(max_n=2)) is parsed


def test_embedding_dimensions_limit() -> None:
    raw = b'{"model": "e", "input": "x", "dimensions": 4097.0}'
    error = _refused(raw, InputLimits(max_dimensions=4096), "embeddings")
    assert (error.param, error.code) == ("dimensions", "dimensions_too_large")
    within = parse_request("embeddings", b'{"model": "e", "input": "x", "dimensions": 4096}')
    assert apply_input_limits(within, InputLimits(max_dimensions=4096)) is within
    assert apply_input_limits(parse_request("embeddings", raw), InputLimits()) is not None
