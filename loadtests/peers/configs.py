"""Pure config writers for the peer gateways, for one simulated fleet.

Every peer is given the same upstreams (``Upstream``: a base URL and the model it serves)
and one public model name the clients ask for. Parameters per writer:

- ``litellm_config``: LiteLLM proxy YAML (``model_list`` with one deployment per upstream
  under the public name; ``provider`` is ``openai`` for the fake, ``hosted_vllm`` for the
  simulated vLLM replicas; ``routing_strategy`` is LiteLLM's router strategy, e.g.
  ``simple-shuffle`` or ``least-busy``). The master key travels in the environment.
- ``vllm_router_argv``: vllm-router's command line (``--worker-urls``, ``--policy``
  ``round_robin`` or ``cache_aware``, its metrics port beside its own, and optionally a
  ``RouterLimit``).
- ``nginx_conf``: a foreground nginx with every path inside ``root`` (pid, logs, temp
  folders), ``proxy_buffering off`` and upstream keep-alive; ``balance`` is ``round_robin``
  or ``least_conn``; ``limit_conn`` caps the requests in flight (the excess gets 429), the
  closest nginx has to admission control. ``/nginx-health`` answers 200 for readiness.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

NGINX_HEALTH = "/nginx-health"
Balance = Literal["round_robin", "least_conn"]


@dataclass(frozen=True, slots=True)
class Upstream:
    """One backend every peer forwards to."""

    url: str
    model: str

    def host_port(self) -> str:
        parts = urlsplit(self.url)
        if parts.hostname is None or parts.port is None:
            raise ValueError(f"upstream URL needs a host and a port: {self.url!r}")
        return f"{parts.hostname}:{parts.port}"


@dataclass(frozen=True, slots=True)
class RouterLimit:
    """vllm-router's ``--max-concurrent-requests``, ``--queue-size``, ``--queue-timeout-secs``."""

    max_concurrent: int
    queue_size: int
    queue_timeout_s: int


def litellm_config(
    public_model: str,
    upstreams: Sequence[Upstream],
    *,
    provider: str = "hosted_vllm",
    routing_strategy: str = "simple-shuffle",
    timeout_s: float = 600.0,
) -> dict[str, Any]:
    """LiteLLM proxy config: every upstream a deployment of ``public_model``."""
    if not upstreams:
        raise ValueError("at least one upstream is required")
    deployments = [
        {
            "model_name": public_model,
            "litellm_params": {
                "model": f"{provider}/{u.model}",
                "api_base": u.url.rstrip("/") + "/v1",
                "api_key": "none",
                "timeout": timeout_s,
            },
        }
        for u in upstreams
    ]
    return {
        "model_list": deployments,
        # Retries would hide upstream behaviour; the other paths do not retry either.
        "router_settings": {"routing_strategy": routing_strategy, "num_retries": 0},
        "litellm_settings": {"request_timeout": timeout_s, "num_retries": 0},
    }


def vllm_router_argv(
    binary: Path,
    port: int,
    upstreams: Sequence[Upstream],
    policy: str = "round_robin",
    limit: RouterLimit | None = None,
) -> list[str]:
    """vllm-router on 127.0.0.1:``port`` over the upstreams; ``limit``: its concurrency cap
    with a short queue (the excess gets 429), the closest it has to admission control."""
    if not upstreams:
        raise ValueError("at least one upstream is required")
    urls = [u.url.rstrip("/") for u in upstreams]
    # Its metrics listener defaults to one fixed port (29000) that another run may hold.
    argv = [str(binary), "--host", "127.0.0.1", "--port", str(port),
            "--worker-urls", *urls, "--policy", policy,
            "--log-level", "warning", "--prometheus-port", str(metrics_port_of(port))]  # fmt: skip
    if limit is not None:
        argv += ["--max-concurrent-requests", str(limit.max_concurrent),
                 "--queue-size", str(limit.queue_size),
                 "--queue-timeout-secs", str(limit.queue_timeout_s)]  # fmt: skip
    return argv


def metrics_port_of(port: int) -> int:
    """vllm-router's Prometheus port for a router on ``port``: 10000 above it, wrapped into
    the unprivileged range."""
    return 1024 + (port + 10000 - 1024) % (65536 - 1024)


def nginx_conf(
    root: Path,
    port: int,
    upstreams: Sequence[Upstream],
    *,
    balance: Balance = "round_robin",
    limit_conn: int | None = None,
    keepalive: int = 256,
) -> str:
    """nginx.conf text for a reverse proxy on 127.0.0.1:``port`` (see the module doc)."""
    if not upstreams:
        raise ValueError("at least one upstream is required")
    servers = "\n".join(f"        server {u.host_port()} max_fails=0;" for u in upstreams)
    method = "        least_conn;\n" if balance == "least_conn" else ""
    zone = (
        "    limit_conn_zone $server_addr zone=inflight:1m;\n    limit_conn_log_level info;\n"
        if limit_conn
        else ""
    )
    limit = (
        f"            limit_conn inflight {limit_conn};\n            limit_conn_status 429;\n"
        if limit_conn
        else ""
    )
    temp = "\n".join(
        f"    {kind}_temp_path {root / 'tmp' / kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    return f"""daemon off;
worker_processes auto;
pid {root / "nginx.pid"};
error_log {root / "nginx-error.log"} warn;
events {{
    worker_connections 8192;
}}
http {{
    access_log off;
{temp}
{zone}    upstream fleet {{
{method}{servers}
        keepalive {keepalive};
    }}
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        keepalive_requests 100000;
        location = {NGINX_HEALTH} {{
            return 200 "ok";
        }}
        location / {{
{limit}            proxy_pass http://fleet;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
            proxy_request_buffering off;
            proxy_read_timeout 600s;
            client_max_body_size 64m;
        }}
    }}
}}
"""


def nginx_temp_dirs(root: Path) -> list[Path]:
    """The folders ``nginx_conf`` points nginx's temp files to (they must exist)."""
    return [root / "tmp" / kind for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")]
