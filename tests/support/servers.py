"""Run ASGI apps on real uvicorn servers on 127.0.0.1, each in its own thread."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = threading.Event()

    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets)
        self.ready.set()

    def install_signal_handlers(self) -> None:
        # Servers run in threads here; signals belong to the main thread.
        return None


@contextmanager
def serve(app: Any) -> Iterator[str]:
    """Start ``app`` on a free port; yield its base URL; stop it on exit."""
    config = uvicorn.Config(
        app, host="127.0.0.1", port=0, log_level="warning", lifespan="on", loop="uvloop"
    )
    server = _Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    if not server.ready.wait(timeout=15):
        server.should_exit = True
        raise RuntimeError("server did not start")
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)
