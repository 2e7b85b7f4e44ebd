"""Keep secrets out of what the gateway shows: policy dumps, error texts, logs, traces, answers.

``redact(value)`` hides credentials written inside URLs (``scheme://user:password@host``)
before a policy is shown: ``/admin/policy`` walks the whole dumped policy and masks every
URL's password.

``Redactor`` (one per compiled policy, holding its secret values: upstream keys read from
the environment, passwords inside its URLs) cleans text on the way out, by one of two rules:

- ``text``, for everything that is not generated content (a backend's error text, access
  log and trace fields): every configured secret value; every token ending in the last
  ``TAIL`` characters of one (a masked ``sk-...wxyz`` or "key ending in wxyz"); anything
  shaped like an API key or bearer token (``KEY_SHAPES``: ``Bearer <token>``, ``sk-...``,
  ``hf_...``, ``ghp_...``, ``AKIA...``, JWTs, ``api_key=...``, keys masked with ``****``
  or ``...``, long tokens mixing letters and digits). All become ``[redacted]``.
- ``content``, for answers (the model's text, relayed as sent): the configured secret values
  only, raw and JSON-escaped, so an echoing backend cannot hand its key to a client, while
  text that merely looks like a key (a code sample's placeholder) stays as generated. A
  secret split across two stream events is not seen.

Secret values shorter than ``MIN_SECRET`` characters are not searched for in text (they
would match ordinary words); the URL masking above still hides them in policy dumps.
Cost: ``content`` is one substring search per secret (C speed); ``text`` adds one regex scan,
linear in the text (every pattern starts at a word start); ``clipped`` bounds the text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import orjson

MASK = "***"
REDACTED = "[redacted]"
MIN_SECRET = 8
TAIL = 4
MAX_FIELD = 256  # characters of an outside text kept in a log or trace field
KEPT_FIELDS = 1024  # cleaned field values kept per redactor (emptied when full)

# Every alternative starts where a word starts (``_W``): sre then tries each position once
# and fails at once inside words, so the scan stays linear even on one long word.
_W = r"(?<![A-Za-z0-9_.*-])"
KEY_SHAPES = re.compile(
    # Masked keys first, so a prefix rule below cannot stop short of the visible tail.
    rf"{_W}(?:[A-Za-z0-9_-]*\*{{3,}}[A-Za-z0-9_*-]*"
    r"|[A-Za-z0-9_-]{2,}(?:\.{3}|\u2026)[A-Za-z0-9_-]{2,}\b"
    r"|(?i:bearer)\s+[A-Za-z0-9._~+/=-]{8,}"
    r"|(?:sk|pk|rk|nvapi)-[A-Za-z0-9_-]{8,}"
    r"|(?:hf|gsk|sk_live|sk_test|rk_live|ghp|gho|ghu|ghs|ghr|github_pat|glpat)_[A-Za-z0-9_]{10,}"
    r"|xox[abprs]-[A-Za-z0-9-]{10,}"
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}\b"
    r"|AIza[0-9A-Za-z_-]{30,}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"
    r"|(?i:(?:api[_-]?key|access[_-]?token|auth[_-]?token|secret|password|passwd|token)"
    r"[\"']?\s*[:=]\s*[\"']?)[^\s\"',;]{4,}"
    r"|(?=[A-Za-z_-]*\d)(?=[0-9_-]*[A-Za-z])[A-Za-z0-9_-]{32,}\b)"
)
# The label in front of a key, kept so the text still says what was there.
_LABEL = re.compile(r"(?i)bearer\s+|[\w-]*[\"']?\s*[:=]\s*[\"']?")


def redact(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: redact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v) for v in value]
    if isinstance(value, str) and "://" in value and "@" in value:
        return _redact_url(value)
    return value


def url_passwords(value: Any) -> list[str]:
    """The password of every URL in a dumped policy (nested dicts and lists)."""
    if isinstance(value, dict):
        return [p for v in value.values() for p in url_passwords(v)]
    if isinstance(value, list):
        return [p for v in value for p in url_passwords(v)]
    if isinstance(value, str) and "://" in value and "@" in value:
        try:
            password = urlsplit(value).password
        except ValueError:
            return []
        return [password] if password else []
    return []


def _redact_url(url: str) -> str:
    try:
        parts = urlsplit(url)
    except ValueError:
        return MASK  # not a URL we can read: show nothing of it
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port is not None else ""
    return urlunsplit(parts._replace(netloc=f"{user}:{MASK}@{host}{port}"))


class Redactor:
    """Removes a policy's secret values (and, in ``text``, key-shaped tokens) from output."""

    __slots__ = ("_kept", "_raw", "_secrets", "_tails")

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        # Longest first: a secret that contains another is replaced whole.
        values = sorted({s for s in secrets if len(s) >= MIN_SECRET}, key=len, reverse=True)
        self._secrets = tuple(values)
        self._raw = tuple(_forms(values))
        tails = sorted({re.escape(s[-TAIL:]) for s in values})
        # A whole whitespace-delimited token ending in a tail; anchored at token starts so
        # one long word costs one pass, not one per character.
        self._tails = re.compile(rf"(?<!\S)\S*?(?:{'|'.join(tails)})\b") if tails else None
        self._kept: dict[str, str] = {}  # field value (at most MAX_FIELD long) -> cleaned

    def __repr__(self) -> str:
        return f"Redactor({len(self._secrets)} secrets)"  # never the values

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Redactor) and other._secrets == self._secrets

    def __hash__(self) -> int:
        return hash(self._secrets)

    @property
    def redacts_content(self) -> bool:
        """Whether ``content`` can change anything (the policy has secrets)."""
        return bool(self._raw)

    def content(self, raw: bytes) -> bytes:
        """``raw`` (an answer, JSON) without any configured secret value."""
        for form in self._raw:
            if form in raw:
                raw = raw.replace(form, REDACTED.encode())
        return raw

    def text(self, text: str) -> str:
        """``text`` without secret values, their tails, or anything shaped like a key."""
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        if self._tails is not None:
            text = self._tails.sub(REDACTED, text)
        return KEY_SHAPES.sub(_keep_label, text)

    def fields(self, fields: Mapping[str, Any], keys: Iterable[str]) -> dict[str, Any]:
        """A log line's fields with the string values of ``keys`` (the ones holding text
        from outside: the others are the gateway's and the policy's) cut to ``MAX_FIELD``
        characters and redacted.

        The same values come back request after request (a model's name, an error code), so
        the cleaned form of a value no longer than ``MAX_FIELD`` is kept, up to
        ``KEPT_FIELDS`` of them (then all forgotten at once): the scans run once per value,
        not per line. The redactor's secrets never change, so a kept form stays right."""
        out = dict(fields)
        kept = self._kept
        for key in keys:
            value = out.get(key)
            if isinstance(value, str):
                clean = kept.get(value)
                if clean is None:
                    clean = self.clipped(value, MAX_FIELD)
                    if len(value) <= MAX_FIELD:
                        if len(kept) >= KEPT_FIELDS:
                            kept.clear()
                        kept[value] = clean
                out[key] = clean
        return out

    def clipped(self, text: str, limit: int) -> str:
        """At most ``limit`` characters of ``text``, redacted. Redaction runs on a window
        four times as long, so a key the cut would halve is still seen whole, and the cost
        stays bounded whatever the length of ``text``."""
        return self.text(text[: 4 * limit])[:limit]


def _forms(values: Iterable[str]) -> Iterable[bytes]:
    """Each secret as it can appear in JSON bytes: raw, and escaped when that differs."""
    for value in values:
        raw = value.encode()
        yield raw
        escaped = orjson.dumps(value)[1:-1]
        if escaped != raw:
            yield escaped


def _keep_label(match: re.Match[str]) -> str:
    """``[redacted]`` in place of the key, keeping a ``Bearer``/``api_key=`` label readable."""
    found = match.group(0)
    head = _LABEL.match(found)
    if head is not None and head.end() < len(found) and not found[head.end() - 1].isalnum():
        return found[: head.end()] + REDACTED
    return REDACTED
