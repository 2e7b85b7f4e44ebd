"""The gateway's own HTTP/1.1 client for the hot path to backends.

General-purpose clients spend most of a streaming relay's CPU in layers a proxy does not need
(cookies, auth, redirects, a pure-Python parser); this one parses with httptools (the parser
uvicorn uses), hands body bytes over as they arrive, and closes the connection at once when
the exchange is abandoned, which is how vLLM and TGI learn that a client went away.
"""

from gateway.upstream.connection import (
    ConnectFailed,
    ProtocolFailed,
    UpstreamIOError,
    UpstreamResponse,
)
from gateway.upstream.connection_pool import ConnectionPool
from gateway.upstream.origin import Origin, ProxyRoute, TlsSettings

__all__ = [
    "ConnectFailed",
    "ConnectionPool",
    "Origin",
    "ProtocolFailed",
    "ProxyRoute",
    "TlsSettings",
    "UpstreamIOError",
    "UpstreamResponse",
]
