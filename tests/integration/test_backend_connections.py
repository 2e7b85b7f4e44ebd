"""How the gateway reaches its backends, against real uvicorn servers on 127.0.0.1: URLs with a
base path, TLS (a CA made for the test, verify off, client certificates), the header carrying
the upstream key and HTTP proxies from the environment. Probes and requests go the same way,
and a failing probe says why in the log once, not on every probe."""

from __future__ import annotations

import logging
import ssl
import threading
from collections.abc import Callable
from typing import Any

import httpx2 as httpx
import openai
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route

from gateway.app import build_app
from gateway.policy import PolicyError, load_policy_text
from loadtests.kit.fake_upstream import FakeConfig, build_fake
from tests.support.forward_proxy import forward_proxy
from tests.support.security import UPSTREAM_ENV, UPSTREAM_SECRET
from tests.support.servers import serve
from tests.support.tls_files import TlsFiles, make_tls

Seen = tuple[str, str, dict[str, str]]  # method, path, headers


class Recorder:
    """Wraps an ASGI app and records every request, so a test can wait for some to arrive."""

    def __init__(self, app: Any) -> None:
        self._app = app
        self._seen: list[Seen] = []
        self._changed = threading.Condition()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
            with self._changed:
                self._seen.append((scope["method"], scope["path"], headers))
                self._changed.notify_all()
        await self._app(scope, receive, send)

    def seen(self, path: str | None = None) -> list[Seen]:
        with self._changed:
            return [s for s in self._seen if path is None or s[1] == path]

    def wait_for(self, path: str, count: int) -> None:
        with self._changed:
            ok = self._changed.wait_for(lambda: len(self.seen(path)) >= count, timeout=10)
        assert ok, f"{count} requests to {path} never came: {self.seen()}"


def _backend(prefix: str = "") -> Recorder:
    fake = build_fake(FakeConfig(model="fake-model", ttft_s=0.001, tokens=3, itl_s=0.001))
    return Recorder(Starlette(routes=[Mount(prefix, app=fake)]) if prefix else fake)


def _policy(url: str, *, engine: str = "vllm", extra: str = "", health: str = "") -> str:
    return f"""
backends:
  - name: b0
    url: {url}
    engine: {engine}
    model: fake-model
    pool: p
{extra}
models:
  fast: {{pool: p}}
{health}
"""


def _ask(gateway: str) -> str:
    client = openai.OpenAI(base_url=gateway + "/v1", api_key="unused", max_retries=0, timeout=10)
    out = client.chat.completions.create(model="fast", messages=[{"role": "user", "content": "hi"}])
    return out.choices[0].message.content or ""


def _ready(gateway: str) -> bool:
    return httpx.get(gateway + "/readyz", timeout=10).status_code == 200


def _serve_gateway(policy_text: str, env: dict[str, str] | None = None) -> Any:
    """The gateway on ``policy_text``, compiled with ``env`` added to the environment (proxy
    variables are read then); the test's own clients never see ``env``."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in (env or {}).items():
            patch.setenv(name, value)
        app = build_app(load_policy_text(policy_text))
    return serve(app)


# --- base paths ---------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", ["/llm", "/llm/", "/llm/v1", "/llm/v1/"])
def test_backend_under_a_base_path_in_either_form(suffix: str) -> None:
    backend = _backend("/llm")
    with serve(backend) as url, _serve_gateway(_policy(url + suffix)) as gateway:
        assert _ready(gateway)
        assert _ask(gateway)
    paths = {path for _, path, _ in backend.seen()}
    # /v1/models: the served context length, read once before serving.
    want = {"/llm/health", "/llm/metrics", "/llm/v1/models", "/llm/v1/chat/completions"}
    assert paths == want


def test_openai_engine_is_probed_on_its_api_base() -> None:
    backend = _backend("/openai")
    with serve(backend) as url, _serve_gateway(_policy(url + "/openai/v1", engine="openai")) as gw:
        assert _ready(gw)
        assert _ask(gw)
    assert {path for _, path, _ in backend.seen()} == {
        "/openai/v1/models",
        "/openai/v1/chat/completions",
    }


def test_a_failing_probe_says_why_once(caplog: pytest.LogCaptureFixture) -> None:
    backend = _backend("/llm")
    fast = "health: {interval_s: 0.02, scrape_interval_s: 0.02}"
    caplog.set_level(logging.INFO, logger="gateway.backends")
    with serve(backend) as url, _serve_gateway(_policy(url + "/wrong", health=fast)) as gw:
        backend.wait_for("/wrong/health", 6)
        assert not _ready(gw)
    probe = [r.getMessage() for r in caplog.records if r.name == "gateway.backends.health"]
    reason = f"GET {url}/wrong/health answered 404: Not Found"
    assert [m for m in probe if "fails" in m] == [f"health probe of backend b0 fails: {reason}"]
    assert "backend b0 is now unhealthy" in probe
    scrape = [r.getMessage() for r in caplog.records if r.name == "gateway.backends.load_watch"]
    assert len(scrape) <= 1  # the backend is unhealthy, so it is scraped once at most


def _quotes_its_key(request: Request) -> Response:
    """A health check refusing the key it got, and saying so with the key in its text."""
    key = request.headers.get("authorization", "").removeprefix("Bearer ")
    return Response(f"Incorrect API key provided: {key}. Masked: {key[:6]}****{key[-4:]}", 401)


def test_a_failing_probe_never_logs_the_key_a_backend_quotes(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(UPSTREAM_ENV, UPSTREAM_SECRET)
    backend = Recorder(Starlette(routes=[Route("/health", _quotes_its_key)]))
    caplog.set_level(logging.INFO, logger="gateway.backends")
    extra = f"    api_key_env: {UPSTREAM_ENV}\n"
    with serve(backend) as url, _serve_gateway(_policy(url, extra=extra)) as gw:
        backend.wait_for("/health", 1)
        assert not _ready(gw)
    probe = [r.getMessage() for r in caplog.records if r.name == "gateway.backends.health"]
    fails = [m for m in probe if "fails" in m]
    assert fails == [
        f"health probe of backend b0 fails: GET {url}/health answered 401: "
        "Incorrect API key provided: [redacted]. Masked: [redacted]"
    ]
    assert UPSTREAM_SECRET[-4:] not in caplog.text


# --- the header carrying the upstream key --------------------------------------------------


@pytest.mark.parametrize(
    ("style", "header", "value"),
    [
        ("", "authorization", f"Bearer {UPSTREAM_SECRET}"),
        ("    api_key_header: authorization", "authorization", f"Bearer {UPSTREAM_SECRET}"),
        ("    api_key_header: api-key", "api-key", UPSTREAM_SECRET),
    ],
)
def test_upstream_key_header(
    monkeypatch: pytest.MonkeyPatch, style: str, header: str, value: str
) -> None:
    monkeypatch.setenv(UPSTREAM_ENV, UPSTREAM_SECRET)
    backend = _backend()
    extra = f"    api_key_env: {UPSTREAM_ENV}\n{style}"
    with serve(backend) as url, _serve_gateway(_policy(url, engine="openai", extra=extra)) as gw:
        assert _ask(gw)
    seen = backend.seen()
    assert {path for _, path, _ in seen} == {"/v1/models", "/v1/chat/completions"}
    other = ({"authorization", "api-key"} - {header}).pop()
    for _, path, headers in seen:
        assert headers.get(header) == value, path
        assert other not in headers, path


# --- TLS -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return make_tls(tmp_path_factory.mktemp("tls"))


def _https(tls: TlsFiles, *, client_auth: bool = False) -> Any:
    options: dict[str, Any] = {
        "ssl_certfile": str(tls.server_cert),
        "ssl_keyfile": str(tls.server_key),
    }
    if client_auth:
        options |= {"ssl_ca_certs": str(tls.ca), "ssl_cert_reqs": ssl.CERT_REQUIRED}
    return options


TlsCase = Callable[[TlsFiles], str]


def _mutual(t: TlsFiles) -> str:
    return f"{{ca_file: {t.ca}, client_cert: {t.client_cert}, client_key: {t.client_key}}}"


@pytest.mark.parametrize(
    ("client_auth", "settings", "why_not"),
    [
        (False, lambda t: f"{{ca_file: {t.ca}}}", None),
        (False, lambda t: "{verify: false}", None),
        (False, lambda t: "", "CERTIFICATE_VERIFY_FAILED"),  # the system's CAs: no test CA
        (True, _mutual, None),
        # No client certificate: the server hangs up after the handshake.
        (True, lambda t: f"{{ca_file: {t.ca}}}", "the backend closed the connection"),
    ],
    ids=["ca_file", "verify-off", "system-cas", "client-cert", "no-client-cert"],
)
def test_https_backend(
    tls: TlsFiles,
    caplog: pytest.LogCaptureFixture,
    client_auth: bool,
    settings: TlsCase,
    why_not: str | None,
) -> None:
    works = why_not is None
    caplog.set_level(logging.WARNING, logger="gateway.backends.health")
    backend = _backend()
    text = settings(tls)
    extra = f"    tls: {text}" if text else ""
    with (
        serve(backend, **_https(tls, client_auth=client_auth)) as url,
        _serve_gateway(_policy(url, extra=extra)) as gateway,
    ):
        assert url.startswith("https://")
        assert _ready(gateway) is works
        if works:
            assert _ask(gateway)
            assert backend.seen("/v1/chat/completions")
        else:
            with pytest.raises(openai.APIStatusError) as refused:
                _ask(gateway)
            assert refused.value.status_code in (502, 503)
            assert not backend.seen()
    failures = [
        r.getMessage()
        for r in caplog.records
        if r.name == "gateway.backends.health" and "fails" in r.getMessage()
    ]
    if works:
        assert failures == []
    else:
        assert len(failures) == 1
        assert why_not is not None
        assert why_not in failures[0]


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ("{ca_file: /nonexistent/ca.pem}", "backends[0].tls"),
        ("{client_cert: /nonexistent/client.pem}", "backends[0].tls"),
        ("{verify: false, ca_file: /x.pem}", "backends.0.tls"),
        ("{client_key: /x.key}", "backends.0.tls"),
    ],
)
def test_unusable_tls_settings_are_policy_errors(settings: str, field: str) -> None:
    with pytest.raises(PolicyError) as refused:
        load_policy_text(_policy("https://127.0.0.1:1", extra=f"    tls: {settings}"))
    assert field.replace(".0.", "[0].") in refused.value.render()


def test_tls_on_a_plain_http_url_is_refused() -> None:
    with pytest.raises(PolicyError, match="https:// URLs only"):
        load_policy_text(_policy("http://127.0.0.1:1", extra="    tls: {verify: false}"))


# --- proxies from the environment ----------------------------------------------------------


@pytest.fixture
def no_proxy_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    return monkeypatch


@pytest.mark.parametrize("trust_env", [True, False])
def test_http_backend_through_the_proxy_only_when_trusted(
    no_proxy_env: pytest.MonkeyPatch, trust_env: bool
) -> None:
    backend = _backend("/llm")
    with forward_proxy() as (proxy, log), serve(backend) as url:
        env = {"HTTP_PROXY": proxy.replace("http://", "http://user:p%40ss@")}
        extra = f"    trust_env: {str(trust_env).lower()}"
        with _serve_gateway(_policy(url + "/llm/v1", extra=extra), env) as gateway:
            assert _ready(gateway)
            assert _ask(gateway)
    if not trust_env:
        assert log.lines == []
        return
    assert f"GET {url}/llm/health HTTP/1.1" in log.lines
    assert f"POST {url}/llm/v1/chat/completions HTTP/1.1" in log.lines
    assert set(log.authorizations) == {"Basic dXNlcjpwQHNz"}  # user:p@ss
    # The backend saw origin-form paths, not the proxy's absolute ones.
    assert {p for _, p, _ in backend.seen()} >= {"/llm/health", "/llm/v1/chat/completions"}


def test_https_backend_through_a_connect_tunnel(
    no_proxy_env: pytest.MonkeyPatch, tls: TlsFiles
) -> None:
    backend = _backend()
    with forward_proxy() as (proxy, log), serve(backend, **_https(tls)) as url:
        extra = f"    trust_env: true\n    tls: {{ca_file: {tls.ca}}}"
        with _serve_gateway(_policy(url + "/v1", extra=extra), {"https_proxy": proxy}) as gateway:
            assert _ready(gateway)
            assert _ask(gateway)
    authority = url.removeprefix("https://")
    assert log.lines
    assert set(log.lines) == {f"CONNECT {authority} HTTP/1.1"}
    assert backend.seen("/v1/chat/completions")


def test_no_proxy_sends_the_backend_direct(no_proxy_env: pytest.MonkeyPatch) -> None:
    backend = _backend()
    with forward_proxy() as (proxy, log), serve(backend) as url:
        env = {"ALL_PROXY": proxy, "NO_PROXY": "example.com,127.0.0.0/8"}
        with _serve_gateway(_policy(url, extra="    trust_env: true"), env) as gateway:
            assert _ready(gateway)
            assert _ask(gateway)
    assert log.lines == []


def test_unusable_proxy_variable_is_a_policy_error(no_proxy_env: pytest.MonkeyPatch) -> None:
    no_proxy_env.setenv("HTTPS_PROXY", "socks5://user:secret@127.0.0.1:1080")
    with pytest.raises(PolicyError) as refused:
        load_policy_text(_policy("https://127.0.0.1:1", extra="    trust_env: true"))
    shown = refused.value.render()
    assert "backends[0].trust_env" in shown
    assert "not an http:// proxy" in shown
    assert "secret" not in shown
