"""Redaction: configured secrets, their tails and key-shaped text out; ordinary text stays."""

from __future__ import annotations

import orjson
import pytest

from gateway.policy import load_policy_text
from gateway.security.redact import KEPT_FIELDS, MAX_FIELD, REDACTED, Redactor, url_passwords
from tests.support.security import UPSTREAM_ENV, UPSTREAM_SECRET

SECRET = "cfg-secret-Zq81mWx4"  # shaped like nothing: only the configured value finds it
R = Redactor([SECRET, "short"])

# id -> (text, after Redactor.text)
TEXTS: dict[str, tuple[str, str]] = {
    "configured secret": (f"key {SECRET} refused", f"key {REDACTED} refused"),
    "its tail": ("the key ending in mWx4 is bad", f"the key ending in {REDACTED} is bad"),
    "masked with its tail": ("key cfg-****mWx4 refused", f"key {REDACTED} refused"),
    "OpenAI key": ("sk-proj-AbCdEfGh12345678 nope", f"{REDACTED} nope"),
    "OpenAI masked": ("provided: sk-abc*************wxyz.", f"provided: {REDACTED}."),
    "dots mask": ("provided: abcd...wxyz.", f"provided: {REDACTED}."),
    "bearer": ("Authorization: Bearer abc.DEF-123_xyz", f"Authorization: Bearer {REDACTED}"),
    "api_key=": ('{"api_key": "k-12345"}', f'{{"api_key": "{REDACTED}"}}'),
    "password=": ("password=hunter22 user=bob", f"password={REDACTED} user=bob"),
    "Hugging Face": ("hf_AbCdEfGhIjKlMnOpQr", REDACTED),
    "GitHub": ("ghp_AbCdEfGhIjKlMnOpQrStUv1234", REDACTED),
    "AWS": ("AKIAIOSFODNN7EXAMPLE", REDACTED),
    "JWT": ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlMTIz", REDACTED),
    "long token": ("id 3f2a1c4e1b2c4d5e8f900123456789ab", f"id {REDACTED}"),
    "short secret not searched": ("a short answer", "a short answer"),
    "context length": (
        "This model's maximum context length is 4096 tokens. You asked for 5000 tokens.",
        "This model's maximum context length is 4096 tokens. You asked for 5000 tokens.",
    ),
    "max_tokens": ("max_tokens must be at least 1, got 0", "max_tokens must be at least 1, got 0"),
    "token limit": ("token limit: 4096", "token limit: 4096"),
    "model name": ("meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B-Instruct"),
}


@pytest.mark.parametrize(("text", "expected"), TEXTS.values(), ids=list(TEXTS))
def test_text(text: str, expected: str) -> None:
    assert R.text(text) == expected


# id -> (answer bytes, after Redactor.content)
ANSWERS: dict[str, tuple[bytes, bytes]] = {
    "echoed key": (
        orjson.dumps({"content": f"your key is {SECRET}"}),
        orjson.dumps({"content": f"your key is {REDACTED}"}),
    ),
    "key-shaped text the model wrote stays": (
        b'{"content": "export OPENAI_API_KEY=sk-proj-AbCdEfGh12345678"}',
        b'{"content": "export OPENAI_API_KEY=sk-proj-AbCdEfGh12345678"}',
    ),
    "nothing": (b'{"content": "hi"}', b'{"content": "hi"}'),
}


@pytest.mark.parametrize(("raw", "expected"), ANSWERS.values(), ids=list(ANSWERS))
def test_content(raw: bytes, expected: bytes) -> None:
    assert R.content(raw) == expected


def test_json_escaped_secrets_are_found_in_answers() -> None:
    odd = 'p"ss\\word/with-quote'
    raw = orjson.dumps({"content": f"x {odd} y"})
    assert orjson.loads(Redactor([odd]).content(raw)) == {"content": f"x {REDACTED} y"}


def test_fields_only_touches_the_named_keys_and_never_shows_values() -> None:
    line = {"id": "3f2a1c4e1b2c4d5e8f900123456789ab", "model": SECRET, "status": 200}
    assert R.fields(line, ("model", "error")) == {**line, "model": REDACTED}
    assert SECRET not in repr(R)


@pytest.mark.parametrize(("text", "expected"), TEXTS.values(), ids=list(TEXTS))
def test_fields_clean_a_value_the_same_each_time_it_comes(text: str, expected: str) -> None:
    redactor = Redactor([SECRET, "short"])  # its own: nothing kept from another test
    for _ in range(3):  # the first time scanned, then the kept form
        assert redactor.fields({"model": text}, ("model",)) == {"model": expected}


def test_fields_keep_a_bounded_number_of_short_values() -> None:
    redactor = Redactor([SECRET])
    long = "sk-proj-AbCdEfGh12345678 " + "x" * MAX_FIELD
    for n in range(KEPT_FIELDS + 10):
        assert redactor.fields({"model": f"model-{n}"}, ("model",)) == {"model": f"model-{n}"}
        assert redactor.fields({"model": long}, ("model",)) == {"model": R.clipped(long, MAX_FIELD)}
    assert 0 < len(redactor._kept) <= KEPT_FIELDS
    assert long not in redactor._kept  # longer than a field: cleaned each time, never kept


def test_the_compiled_policy_knows_its_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(UPSTREAM_ENV, UPSTREAM_SECRET)
    policy = load_policy_text(
        f"""
backends:
  - {{name: a, url: "http://127.0.0.1:1", model: m, pool: small, api_key_env: {UPSTREAM_ENV}}}
models: {{fast: {{pool: small}}}}
cache: {{redis: {{url: "redis://:redis-pass-4711@127.0.0.1:6379/0"}}}}
"""
    )
    shown = policy.redactor.text(f"{UPSTREAM_SECRET[:3]}x {UPSTREAM_SECRET} redis-pass-4711")
    assert UPSTREAM_SECRET not in shown
    assert "redis-pass-4711" not in shown


def test_url_passwords() -> None:
    dumped = {"a": ["redis://:pw1@h:1/0", {"b": "https://u:pw2@h"}], "c": "http://h:1", "d": 3}
    assert url_passwords(dumped) == ["pw1", "pw2"]


def test_a_long_masked_key_loses_its_tail_too() -> None:
    assert R.text("provided: sk-abcdefghijkl...wxyz.") == f"provided: {REDACTED}."


def test_clipped_sees_a_key_across_the_cut_and_bounds_the_text() -> None:
    text = "x " * 120 + "sk-proj-AbCdEfGh12345678" + " tail" * 10_000
    out = R.clipped(text, 250)
    assert len(out) == 250
    assert "sk-proj" not in out
    assert out.endswith(REDACTED[:10])
