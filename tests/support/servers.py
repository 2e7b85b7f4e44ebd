"""Test servers: real uvicorn on 127.0.0.1 (shared with the benchmarks)."""

from loadtests.kit.serving import Served, serve, serve_app

__all__ = ["Served", "serve", "serve_app"]
