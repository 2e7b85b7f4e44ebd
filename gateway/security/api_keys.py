"""Gateway API keys: generation, the stored hash, and lookup.

Algorithm: a key is 32 random bytes from ``secrets`` (256 bits), URL-safe base64 with a
``gw-`` prefix; the policy stores ``sha256:<hex>`` of the key's UTF-8 bytes, never the key.
A slow KDF (scrypt, PBKDF2) protects guessable passwords; these keys are not guessable, so a
single SHA-256 is as strong against an offline search (2^256 candidates) and costs about a
microsecond, which keeps the hot path cheap and a flood of wrong keys harmless. Keys chosen
by hand must be at least ``MIN_KEY_CHARS`` long for the same reason.

Lookup hashes the presented key and finds the digest in a dict. Unlike comparing the key
itself, the dict's timing depends only on the digest of the caller's own input, which says
nothing usable about any stored key (preimage resistance), so no constant-time compare over
every stored hash is needed: one hash and one dict probe per request, whatever the key count.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

PREFIX = "sha256:"
MIN_KEY_CHARS = 32
KEY_BYTES = 32


class KeyFormatError(ValueError):
    """A key or stored hash that cannot be used."""


def new_key() -> str:
    return "gw-" + secrets.token_urlsafe(KEY_BYTES)


def hash_key(key: str) -> str:
    if len(key) < MIN_KEY_CHARS:
        raise KeyFormatError(f"a key needs at least {MIN_KEY_CHARS} characters; generate one")
    return PREFIX + _digest(key)


def check_hash(stored: str) -> str:
    """Validate a stored hash's format; return its hex digest."""
    if not stored.startswith(PREFIX):
        raise KeyFormatError(f"must start with {PREFIX!r} (run `latency-gateway hash-key`)")
    digest = stored[len(PREFIX) :]
    if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise KeyFormatError("must be sha256: followed by 64 lowercase hex digits")
    return digest


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class KeyRing:
    """Stored key hashes, each naming its owner (a tenant, or ``admin``)."""

    owners: Mapping[str, str]  # hex digest -> owner

    @classmethod
    def build(cls, entries: Iterable[tuple[str, str]]) -> KeyRing:
        """``entries``: (stored hash, owner); formats must have been checked."""
        return cls(MappingProxyType({check_hash(h): owner for h, owner in entries}))

    @classmethod
    def empty(cls) -> KeyRing:
        return cls(MappingProxyType({}))

    def __bool__(self) -> bool:
        return bool(self.owners)

    def owner_of(self, key: str) -> str | None:
        return self.owners.get(_digest(key))


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, else None."""
    if authorization is None:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()
