"""Upstream credentials: read from the environment at compile time, never shown."""

from __future__ import annotations

from collections.abc import Mapping


class UpstreamSecret:
    """A backend's API key. Its repr and str hide the value so logs and errors cannot leak it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def authorization(self) -> tuple[str, str]:
        return ("authorization", f"Bearer {self._value}")

    def __repr__(self) -> str:
        return "UpstreamSecret(***)"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UpstreamSecret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


def secret_from_env(name: str, env: Mapping[str, str]) -> UpstreamSecret | None:
    """The secret in ``env[name]``; None when unset or empty (the caller reports it)."""
    value = env.get(name, "").strip()
    if not value or "\r" in value or "\n" in value:
        return None
    return UpstreamSecret(value)
