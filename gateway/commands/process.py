"""One gateway process's plumbing, shared by ``serve`` and each ``serve --workers`` worker:
its log, its policy (problems printed, not raised) and uvicorn run on the policy's server
settings, on an address or on a socket already bound."""

from __future__ import annotations

import logging
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from gateway.policy import PolicyError, load_policy_file
from gateway.policy.compile import CompiledPolicy

if TYPE_CHECKING:
    import uvicorn
    from starlette.applications import Starlette


def load_or_report(path: str | Path) -> CompiledPolicy | None:
    """The compiled policy, or None once its problems are printed."""
    try:
        return load_policy_file(path)
    except PolicyError as exc:
        print(exc.render(), file=sys.stderr)
        return None


def configure_logging(log_level: str) -> None:
    logging.basicConfig(
        level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    # httpx logs every upstream request at INFO: far too loud for a proxy.
    logging.getLogger("httpx2").setLevel(logging.WARNING)


def uvicorn_config(
    app: Starlette, policy: CompiledPolicy, *, log_level: str, host: str, port: int
) -> uvicorn.Config:
    """The gateway's own HTTP server, as the policy's ``server`` section sets it."""
    import uvicorn

    from gateway.commands.client_body import serving_protocol

    server = policy.source.server
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        access_log=False,
        # Slow clients cannot hold connections: headers within header_timeout_s (the body's
        # own timeout is checked while reading it); beyond max_connections uvicorn answers 503.
        # A stream's tokens are written past the ASGI send (``client_body.py``).
        http=serving_protocol(server.header_timeout_s),
        limit_concurrency=server.max_connections,
        # uvicorn's own 5 s is httpx's keep-alive expiry too: a client reusing a connection
        # idle for 5 s met it closing (a broken request in a bursty benchmark's quiet gap).
        timeout_keep_alive=server.keepalive_timeout_s,
        # On SIGTERM: stop accepting, let in-flight requests finish for this long, then cancel
        # the rest (which closes their upstream connections, so backends stop generating).
        timeout_graceful_shutdown=server.drain_timeout_s,
    )


def run_uvicorn(
    app: Starlette,
    policy: CompiledPolicy,
    *,
    log_level: str,
    host: str = "127.0.0.1",
    port: int = 8080,
    sock: socket.socket | None = None,
) -> None:
    """Serve ``app`` on ``host:port``, or on the listening ``sock`` (a worker's)."""
    import uvicorn
    from uvicorn.config import STARTUP_FAILURE

    runner = uvicorn.Server(uvicorn_config(app, policy, log_level=log_level, host=host, port=port))
    runner.run(sockets=None if sock is None else [sock])
    if not runner.started:
        sys.exit(STARTUP_FAILURE)  # as uvicorn.run does: the lifespan failed, or the bind
