"""Who may call ``/admin/*``: loopback clients only (default), or holders of an admin key.

``admin.mode: localhost`` accepts connections from 127.0.0.0/8 and ::1 and refuses others
with 403. ``admin.mode: key`` asks every caller, loopback included, for
``Authorization: Bearer <admin key>`` (401 without a valid one): behind a reverse proxy on
the same host every client would look local, so key mode does not trust the address.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping

from gateway.errors import Forbidden, Unauthorized
from gateway.schema import Admin
from gateway.security.api_keys import KeyRing, bearer_token


def check_admin(
    settings: Admin, admin_keys: KeyRing, client_host: str | None, headers: Mapping[str, str]
) -> None:
    if settings.mode == "localhost":
        if not is_loopback(client_host):
            raise Forbidden(
                "Admin endpoints accept connections from localhost only.",
                code="admin_localhost_only",
            )
        return
    token = bearer_token(headers.get("authorization"))
    if token is None or admin_keys.owner_of(token) is None:
        raise Unauthorized("A valid admin API key is required.", code="invalid_admin_key")


def is_loopback(host: str | None) -> bool:
    if host is None:
        return False
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
