"""Run ASGI apps on real uvicorn servers on 127.0.0.1, one thread each (tests, benchmarks)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import uvicorn

from gateway.commands.client_body import serving_protocol
from gateway.schema.server_settings import Server

T = TypeVar("T")


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = threading.Event()
        self.loop: asyncio.AbstractEventLoop | None = None

    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets)
        self.loop = asyncio.get_running_loop()
        self.ready.set()

    def install_signal_handlers(self) -> None:
        # Servers run in threads here; signals belong to the main thread.
        return None


@dataclass(frozen=True)
class Served:
    url: str
    loop: asyncio.AbstractEventLoop

    def call(self, make: Callable[[], Coroutine[Any, Any, T]], timeout: float = 10) -> T:
        """Run a coroutine on the server's own loop (to read its state safely)."""
        return asyncio.run_coroutine_threadsafe(make(), self.loop).result(timeout)


@contextmanager
def serve_app(
    app: Any, *, host: str = "127.0.0.1", port: int = 0, **options: Any
) -> Iterator[Served]:
    """Start ``app`` on ``host`` (a loopback address) and ``port`` (0: a free one); yield its
    URL and loop; stop it on exit. ``options`` go to ``uvicorn.Config`` (with
    ``ssl_certfile`` the URL is https). Served with the gateway's own protocol
    (``commands/client_body.py``) unless ``http`` is given: the gateway's streams are then
    relayed as ``latency-gateway serve`` relays them, past the ASGI ``send``; other apps
    never look at what it adds."""
    options.setdefault("http", serving_protocol(Server().header_timeout_s))
    config = uvicorn.Config(
        app, host=host, port=port, log_level="warning", lifespan="on", loop="uvloop", **options
    )
    scheme = "https" if options.get("ssl_certfile") else "http"
    server = _Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    if not server.ready.wait(timeout=15) or server.loop is None:
        server.should_exit = True
        raise RuntimeError("server did not start")
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield Served(f"{scheme}://{host}:{port}", server.loop)
    finally:
        server.should_exit = True
        thread.join(timeout=15)


@contextmanager
def serve(app: Any, **options: Any) -> Iterator[str]:
    """Start ``app`` on a free port (``serve_app``'s options); yield its base URL; stop it on
    exit."""
    with serve_app(app, **options) as served:
        yield served.url
