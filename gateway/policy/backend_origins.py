"""Each backend's way there, built once per policy: its origin with TLS context and proxy.

Done at compile time (off the event loop on reload) so that a missing CA bundle, a key that
does not match its certificate or a proxy variable the gateway cannot use is a policy error
that ``latency-gateway check`` shows, not a failure on the first request.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import replace

from gateway.schema import Backend, Policy
from gateway.schema.problems import FieldProblem
from gateway.upstream.origin import Origin, TlsSettings
from gateway.upstream.proxy_env import ProxyConfigError, proxy_from_env


def backend_origins(
    policy: Policy, env: Mapping[str, str], problems: list[FieldProblem]
) -> dict[str, Origin]:
    """Origins by backend name; what cannot be built is added to ``problems``."""
    contexts: dict[TlsSettings, ssl.SSLContext] = {}
    origins: dict[str, Origin] = {}
    for i, backend in enumerate(policy.backends):
        origin = Origin.from_url(backend.address)
        try:
            origin = _with_proxy(origin, backend, env)
        except ProxyConfigError as exc:
            problems.append(FieldProblem(f"backends[{i}].trust_env", str(exc)))
        if origin.scheme == "https":
            settings = _tls_settings(backend)
            try:
                context = contexts.get(settings) or settings.context()
            except (OSError, ssl.SSLError) as exc:
                problems.append(FieldProblem(f"backends[{i}].tls", _tls_problem(settings, exc)))
                continue
            contexts[settings] = context
            origin = replace(origin, tls=settings, ssl_context=context)
        origins[backend.name] = origin
    return origins


def _with_proxy(origin: Origin, backend: Backend, env: Mapping[str, str]) -> Origin:
    if not backend.trust_env:
        return origin
    return replace(origin, proxy=proxy_from_env(origin.scheme, origin.host, origin.port, env))


def _tls_settings(backend: Backend) -> TlsSettings:
    tls = backend.tls
    if tls is None:
        return TlsSettings()
    return TlsSettings(tls.ca_file, tls.verify, tls.client_cert, tls.client_key)


def _tls_problem(settings: TlsSettings, exc: Exception) -> str:
    files = [f for f in (settings.ca_file, settings.client_cert, settings.client_key) if f]
    detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return f"cannot load {', '.join(files) or 'the system CAs'}: {detail}"
