"""Where a backend is and how to reach it: address, base path, TLS settings and proxy.

A backend URL is read in one of two forms, told apart by its path:

- the API base, as hosted APIs and the OpenAI SDK write it (``https://host/v1``,
  ``https://host/openai/v1``): the path ends in ``/v1``, which is dropped;
- the server's root, as vLLM, TGI and llama.cpp are started (``http://host:8000``, or a path
  prefix under which an ingress publishes the server: ``https://host/llm``).

Either way what is kept is the server's root prefix; every path the gateway sends, API
(``/v1/chat/completions``) or not (``/health``, ``/metrics``), goes below it, so ``/v1``
never appears twice.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field
from urllib.parse import urlsplit

API_PREFIX = "/v1"


@dataclass(frozen=True, slots=True)
class TlsSettings:
    """TLS to an https backend; the defaults trust the system's CAs."""

    ca_file: str | None = None
    verify: bool = True
    client_cert: str | None = None
    client_key: str | None = None

    def context(self) -> ssl.SSLContext:
        """A client context for these settings. Reads the files (blocking); ``OSError`` or
        ``ssl.SSLError`` when one is missing or not PEM."""
        context = ssl.create_default_context(cafile=self.ca_file)
        if not self.verify:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if self.client_cert is not None:
            context.load_cert_chain(self.client_cert, self.client_key)
        return context


@dataclass(frozen=True, slots=True)
class ProxyRoute:
    """An HTTP proxy: plain-http requests go to it in absolute form, https ones through a
    CONNECT tunnel."""

    host: str
    port: int
    authorization: str | None = field(default=None, repr=False)  # Proxy-Authorization value

    @property
    def display(self) -> str:
        return f"http://{_bracketed(self.host)}:{self.port}"


@dataclass(frozen=True, slots=True)
class Origin:
    """A backend's address with its root prefix, and the settings of the way there."""

    scheme: str
    host: str
    port: int
    base_path: str  # the server's root prefix, without a trailing slash
    tls: TlsSettings | None = None  # None: the system's CAs
    proxy: ProxyRoute | None = None
    # Built from ``tls`` off the event loop (policy compile); equal settings, equal origin.
    ssl_context: ssl.SSLContext | None = field(default=None, compare=False, repr=False)

    @classmethod
    def from_url(cls, url: str) -> Origin:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        return cls(parts.scheme, parts.hostname, port, root_path(parts.path))

    @property
    def host_header(self) -> str:
        default = 443 if self.scheme == "https" else 80
        host = _bracketed(self.host)
        return host if self.port == default else f"{host}:{self.port}"

    @property
    def tunnelled(self) -> bool:
        """Whether the connection is a CONNECT tunnel through the proxy."""
        return self.proxy is not None and self.scheme == "https"

    def target(self, path: str) -> str:
        """The request target for ``path``: absolute through a plain-http proxy, else the
        path below the root prefix."""
        if self.proxy is not None and self.scheme == "http":
            return self.url(path)
        return self.base_path + path

    def url(self, path: str) -> str:
        return f"{self.scheme}://{self.host_header}{self.base_path}{path}"

    def proxy_headers(self) -> list[tuple[str, str]]:
        """Headers for the proxy on each request (a tunnel sends them once, on CONNECT)."""
        proxy = self.proxy
        if proxy is None or proxy.authorization is None or self.tunnelled:
            return []
        return [("proxy-authorization", proxy.authorization)]


def root_path(path: str) -> str:
    """The server's root prefix of a URL path (a trailing ``/v1`` is the API, not the root)."""
    path = path.rstrip("/")
    return path.removesuffix(API_PREFIX) if path.endswith(API_PREFIX) else path


def url_form(url: str) -> str:
    """How a backend URL was understood, in words (``latency-gateway check``)."""
    origin = Origin.from_url(url)
    root = origin.url("")
    api = origin.url(API_PREFIX)
    if urlsplit(url).path.rstrip("/").endswith(API_PREFIX):
        return f"API base; server root {root} (probes, metrics), API {api}"
    return f"server root; API {api}"


def way_notes(origin: Origin) -> list[str]:
    """What is special about the way to ``origin`` (TLS settings, proxy), in words."""
    notes = []
    tls = origin.tls
    if tls is not None and not tls.verify:
        notes.append("TLS certificate not verified")
    if tls is not None and tls.ca_file is not None:
        notes.append(f"TLS CA file {tls.ca_file}")
    if tls is not None and tls.client_cert is not None:
        notes.append(f"client certificate {tls.client_cert}")
    if origin.proxy is not None:
        how = "CONNECT tunnel through" if origin.tunnelled else "through"
        notes.append(f"{how} proxy {origin.proxy.display}")
    return notes


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host
