"""The standard proxy environment variables, read for the backends that opt in (``trust_env``).

Algorithm: for a backend ``scheme://host:port`` the proxy is ``<scheme>_proxy`` (lower case
first, as curl reads it, then upper case), else ``all_proxy``/``ALL_PROXY``; none when
``no_proxy``/``NO_PROXY`` names the host. ``no_proxy`` is a comma-separated list of ``*``
(every host), host names (``example.com`` and ``.example.com`` both match the name and every
name below it), ``host:port`` (that port only), IP addresses and CIDR blocks
(``10.0.0.0/8``). Proxies are plain ``http://`` ones (an address without a scheme is one);
``user:password@`` in the proxy URL becomes a Basic ``Proxy-Authorization``.
"""

from __future__ import annotations

import base64
import ipaddress
from collections.abc import Mapping
from urllib.parse import unquote, urlsplit

from gateway.upstream.origin import ProxyRoute


class ProxyConfigError(ValueError):
    """A proxy variable the gateway cannot use (its message never shows a password)."""


def proxy_from_env(scheme: str, host: str, port: int, env: Mapping[str, str]) -> ProxyRoute | None:
    """The proxy for ``scheme://host:port`` under ``env``, or None for a direct connection."""
    name, value = _first(env, f"{scheme}_proxy", "all_proxy")
    if not value or _bypassed(host, port, _first(env, "no_proxy")[1]):
        return None
    return parse_proxy_url(value, name)


def parse_proxy_url(value: str, name: str = "proxy") -> ProxyRoute:
    if "://" not in value:
        value = "http://" + value
    parts = urlsplit(value)
    shown = f"{parts.scheme}://{parts.hostname or ''}"
    if parts.scheme != "http":
        raise ProxyConfigError(f"{name} ({shown}) is not an http:// proxy, the only kind supported")
    try:
        port = parts.port or 80
    except ValueError:
        raise ProxyConfigError(f"{name} ({shown}) has an invalid port") from None
    if not parts.hostname:
        raise ProxyConfigError(f"{name} names no host")
    authorization = None
    if parts.username is not None:
        pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        authorization = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
    return ProxyRoute(parts.hostname, port, authorization)


def _first(env: Mapping[str, str], *names: str) -> tuple[str, str]:
    """The first variable set (non-empty) among ``names``, each tried lower then upper case."""
    for name in names:
        for variant in (name, name.upper()):
            value = env.get(variant, "").strip()
            if value:
                return variant, value
    return names[0], ""


def _bypassed(host: str, port: int, no_proxy: str) -> bool:
    host = host.lower().strip("[]")
    for raw in no_proxy.split(","):
        entry = raw.strip().lower()
        if not entry:
            continue
        if entry == "*":
            return True
        entry, wanted_port = _split_port(entry)
        if wanted_port is not None and wanted_port != port:
            continue
        if _matches(host, entry):
            return True
    return False


def _split_port(entry: str) -> tuple[str, int | None]:
    if entry.startswith("["):  # [::1]:8000
        address, _, rest = entry[1:].partition("]")
        return address, int(rest[1:]) if rest.startswith(":") and rest[1:].isdigit() else None
    if entry.count(":") == 1:
        name, _, port = entry.partition(":")
        if port.isdigit():
            return name, int(port)
    return entry, None


def _matches(host: str, entry: str) -> bool:
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        name = entry.lstrip(".")
        return host == name or host.endswith("." + name)
    try:
        return address in ipaddress.ip_network(entry, strict=False)
    except ValueError:
        return False
