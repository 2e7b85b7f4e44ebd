"""The refuse-everything reference: a server that answers every request at once with 503.

What it measures: how long this machine's load client takes to get a refusal that costs the
server nothing, on the same arrivals as the other targets; the floor a gateway's refusals at
arrival are judged against (issue 31: within 1.5x + 50 ms of it). nginx (the peers' install,
``loadtests.peers.install.ensure_nginx``) with ``return 503``: compiled, event driven, no
upstream, so the time is the client's and the kernel's. Its answer looks like a gateway's
refusal (an OpenAI error body, ``Retry-After: 1``, ``x-gateway-queue-ms: 0``), so the client
parses it the same way. No fleet runs behind it.

Parameters: ``port``, ``root`` (its folder for config, pid and logs), the nginx binary.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from loadtests.peers.configs import NGINX_HEALTH, nginx_temp_dirs
from loadtests.peers.targets import Launch, launched

NAME = "refuse-all"
BODY = ('{"error": {"message": "refused by the reference server", '
        '"type": "service_unavailable", "code": "refuse_all"}}')  # fmt: skip


def refuser_conf(root: Path, port: int) -> str:
    """nginx.conf text: 503 at once on every path but the health check (pure)."""
    temp = "\n".join(f"    {kind}_temp_path {p};" for kind, p in
                     zip(("client_body", "proxy", "fastcgi", "uwsgi", "scgi"),
                         nginx_temp_dirs(root), strict=True))  # fmt: skip
    return f"""daemon off;
worker_processes 1;
pid {root / "nginx.pid"};
error_log {root / "nginx-error.log"} warn;
events {{
    worker_connections 8192;
}}
http {{
    access_log off;
{temp}
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        keepalive_requests 100000;
        client_max_body_size 64m;
        location = {NGINX_HEALTH} {{
            return 200 "ok";
        }}
        location / {{
            default_type application/json;
            add_header Retry-After 1 always;
            add_header x-gateway-queue-ms 0 always;
            return 503 '{BODY}';
        }}
    }}
}}
"""


def refuser_launch(port: int, root: Path, nginx: Path) -> Launch:
    home = root.resolve() / "nginx"
    conf = home / "nginx.conf"
    url = f"http://127.0.0.1:{port}"
    argv = [str(nginx), "-p", str(home), "-c", str(conf), "-e", str(home / "stderr.log")]
    return Launch(NAME, argv, url, url + NGINX_HEALTH, files={conf: refuser_conf(home, port)},
                  dirs=tuple(nginx_temp_dirs(home)))  # fmt: skip


@contextmanager
def refusing(port: int, root: Path, nginx: Path, timeout_s: float) -> Iterator[Launch]:
    """The reference server, up for the block (logs in ``root``)."""
    launch = refuser_launch(port, root, nginx)
    with launched(launch, root / "process.log", timeout_s):
        yield launch
