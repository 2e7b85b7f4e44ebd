"""Backend URLs in either form (server root or API base), joined with the paths the gateway
sends, and the proxy chosen from the environment: table tests of the pure parts."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gateway.upstream.origin import Origin, ProxyRoute, url_form
from gateway.upstream.proxy_env import ProxyConfigError, parse_proxy_url, proxy_from_env

CHAT = "/v1/chat/completions"


@pytest.mark.parametrize(
    ("url", "path", "target", "absolute"),
    [
        ("http://h:8000", CHAT, CHAT, "http://h:8000/v1/chat/completions"),
        ("http://h:8000/", "/health", "/health", "http://h:8000/health"),
        ("http://h:8000/v1", CHAT, CHAT, "http://h:8000/v1/chat/completions"),
        ("http://h:8000/v1/", "/health", "/health", "http://h:8000/health"),
        ("https://h/v1", "/v1/models", "/v1/models", "https://h/v1/models"),
        ("https://h/openai/v1", CHAT, "/openai" + CHAT, "https://h/openai/v1/chat/completions"),
        ("https://h/openai/v1", "/metrics", "/openai/metrics", "https://h/openai/metrics"),
        ("https://h/llm", CHAT, "/llm" + CHAT, "https://h/llm/v1/chat/completions"),
        ("https://h/llm", "/health", "/llm/health", "https://h/llm/health"),
        ("http://h/v1/v1", CHAT, "/v1" + CHAT, "http://h/v1/v1/chat/completions"),  # only one
        ("http://h/xv1", CHAT, "/xv1" + CHAT, "http://h/xv1/v1/chat/completions"),
        ("http://h/v10", CHAT, "/v10" + CHAT, "http://h/v10/v1/chat/completions"),
        ("http://[::1]:8000/v1", "/health", "/health", "http://[::1]:8000/health"),
    ],
)
def test_joining_paths_to_backend_urls(url: str, path: str, target: str, absolute: str) -> None:
    origin = Origin.from_url(url)
    assert origin.target(path) == target
    assert origin.url(path) == absolute


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("http://h:8000", "server root; API http://h:8000/v1"),
        ("http://h:8000/llm", "server root; API http://h:8000/llm/v1"),
        ("https://h/v1", "API base; server root https://h (probes, metrics), API https://h/v1"),
        (
            "https://h/openai/v1/",
            "API base; server root https://h/openai (probes, metrics), API https://h/openai/v1",
        ),
    ],
)
def test_url_form_says_how_the_url_was_read(url: str, said: str) -> None:
    assert url_form(url) == said


def test_through_a_plain_http_proxy_the_target_is_absolute() -> None:
    proxy = ProxyRoute("proxy", 3128, "Basic eDp5")
    plain = replace(Origin.from_url("http://h:8000/llm/v1"), proxy=proxy)
    assert plain.target(CHAT) == "http://h:8000/llm/v1/chat/completions"
    assert plain.proxy_headers() == [("proxy-authorization", "Basic eDp5")]
    tunnelled = replace(Origin.from_url("https://h/v1"), proxy=proxy)
    assert tunnelled.tunnelled
    assert tunnelled.target(CHAT) == CHAT  # inside the tunnel, as without a proxy
    assert tunnelled.proxy_headers() == []  # sent once, on CONNECT
    assert "eDp5" not in repr(proxy)


P = ProxyRoute("p", 3128)


@pytest.mark.parametrize(
    ("env", "url", "route"),
    [
        ({}, "http://h:80", None),
        ({"HTTP_PROXY": "http://p:3128"}, "http://h:80", P),
        ({"http_proxy": "http://p:3128", "HTTP_PROXY": "http://q:1"}, "http://h:80", P),
        ({"HTTP_PROXY": "http://p:3128"}, "https://h:443", None),
        ({"HTTPS_PROXY": "p:3128"}, "https://h:443", P),
        ({"https_proxy": "http://p:3128/"}, "https://h:443", P),
        ({"ALL_PROXY": "http://p:3128"}, "https://h:443", P),
        ({"all_proxy": "http://p:3128", "https_proxy": ""}, "https://h:443", P),
        ({"HTTP_PROXY": "http://p"}, "http://h:80", ProxyRoute("p", 80)),
        ({"ALL_PROXY": "http://p:3128", "NO_PROXY": "*"}, "http://h:80", None),
        ({"ALL_PROXY": "http://p:3128", "no_proxy": "h"}, "http://h:80", None),
        ({"ALL_PROXY": "http://p:3128", "no_proxy": "x.org, h"}, "http://h:80", None),
        ({"ALL_PROXY": "http://p:3128", "no_proxy": "example.com"}, "http://a.example.com", None),
        ({"ALL_PROXY": "http://p:3128", "no_proxy": ".example.com"}, "http://example.com", None),
        ({"ALL_PROXY": "http://p:3128", "no_proxy": "example.com"}, "http://badexample.com", P),
        ({"ALL_PROXY": "http://p:3128", "no_proxy": "h:8000"}, "http://h:8000", None),
        ({"ALL_PROXY": "http://p:3128", "no_proxy": "h:8000"}, "http://h:9000", P),
        ({"ALL_PROXY": "http://p:3128", "no_proxy": "10.0.0.0/8"}, "http://10.1.2.3", None),
        ({"ALL_PROXY": "http://p:3128", "no_proxy": "10.0.0.0/8"}, "http://11.1.2.3", P),
        ({"ALL_PROXY": "http://p:3128", "no_proxy": "127.0.0.1"}, "http://127.0.0.1:8", None),
        ({"ALL_PROXY": "http://p:3128", "no_proxy": "::1"}, "http://[::1]:8000", None),
        ({"ALL_PROXY": "http://p:3128", "no_proxy": "[::1]:8000"}, "http://[::1]:8000", None),
        ({"ALL_PROXY": "http://p:3128", "no_proxy": "[::1]:8000"}, "http://[::1]:9", P),
        ({"ALL_PROXY": "http://p:3128", "NO_PROXY": "H"}, "http://h", None),
    ],
)
def test_proxy_from_env(env: dict[str, str], url: str, route: ProxyRoute | None) -> None:
    origin = Origin.from_url(url)
    assert proxy_from_env(origin.scheme, origin.host, origin.port, env) == route


@pytest.mark.parametrize(
    ("value", "authorization"),
    [
        ("http://u:pw@p:3128", "Basic dTpwdw=="),
        ("http://u%40corp:p%3Aw@p:3128", "Basic dUBjb3JwOnA6dw=="),  # u@corp:p:w
        ("http://u@p:3128", "Basic dTo="),
        ("http://p:3128", None),
    ],
)
def test_proxy_credentials_become_basic_authorization(
    value: str, authorization: str | None
) -> None:
    assert parse_proxy_url(value).authorization == authorization


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("https://u:secret@p:3128", "is not an http:// proxy"),
        ("socks5://u:secret@p:1080", "is not an http:// proxy"),
        ("http://p:port", "invalid port"),
        ("http://:3128", "names no host"),
    ],
)
def test_unusable_proxy_urls(value: str, message: str) -> None:
    with pytest.raises(ProxyConfigError, match=message) as refused:
        parse_proxy_url(value, "HTTPS_PROXY")
    assert "secret" not in str(refused.value)
