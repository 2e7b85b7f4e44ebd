"""Upstream credentials: read from the environment at compile time, never shown."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

KeyHeader = Literal["authorization", "api-key"]


class UpstreamSecret:
    """A backend's API key and the header it travels in. Its repr and str hide the value so
    logs and errors cannot leak it."""

    __slots__ = ("_header", "_value")

    def __init__(self, value: str, header: KeyHeader = "authorization") -> None:
        self._value = value
        self._header = header

    def reveal(self) -> str:
        return self._value

    def authorization(self) -> tuple[str, str]:
        """The header carrying the key: ``Authorization: Bearer`` or Azure's ``api-key``."""
        if self._header == "api-key":
            return ("api-key", self._value)
        return ("authorization", f"Bearer {self._value}")

    def __repr__(self) -> str:
        return "UpstreamSecret(***)"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, UpstreamSecret)
            and other._value == self._value
            and other._header == self._header
        )

    def __hash__(self) -> int:
        return hash((self._value, self._header))


def secret_from_env(
    name: str, env: Mapping[str, str], header: KeyHeader = "authorization"
) -> UpstreamSecret | None:
    """The secret in ``env[name]``; None when unset or empty (the caller reports it)."""
    value = env.get(name, "").strip()
    if not value or "\r" in value or "\n" in value:
        return None
    return UpstreamSecret(value, header)
