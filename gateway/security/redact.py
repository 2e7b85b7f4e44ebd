"""Hide credentials written inside URLs (``scheme://user:password@host``) before showing a
policy: ``/admin/policy`` walks the whole dumped policy and masks every URL's password."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

MASK = "***"


def redact(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: redact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v) for v in value]
    if isinstance(value, str) and "://" in value and "@" in value:
        return _redact_url(value)
    return value


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
