"""How a worker reaches its siblings on the same host: one Unix socket each, beside the board.

Protocol: a sibling connects to ``worker-<row>.sock``, sends one command word and a newline
(``metrics``, ``snapshot``, ``reload``), and reads the answer until the worker closes the
connection. A worker answers with the handler its runtime gave for the word (an unknown word
gets an empty answer). ``ask_siblings`` asks every other live row at once and keeps the
answers that came within ``timeout_s``: a sibling that is gone or stuck is left out, never
waited for.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path

from gateway.host.board import Board

log = logging.getLogger(__name__)

Handler = Callable[[], Awaitable[bytes]]
_MAX_COMMAND = 64


def socket_path(folder: Path, row: int) -> Path:
    return folder / f"worker-{row}.sock"


@contextlib.asynccontextmanager
async def answering(board: Board, handlers: Mapping[str, Handler]) -> AsyncIterator[None]:
    """Answer siblings on this worker's socket while the context is open."""
    path = socket_path(board.folder, board.row)
    path.unlink(missing_ok=True)  # a dead worker of the same row left it

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            word = (await reader.readline())[:_MAX_COMMAND].strip().decode(errors="replace")
            handler = handlers.get(word)
            writer.write(await handler() if handler is not None else b"")
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError) as exc:
            log.debug("a sibling left mid-answer: %s", type(exc).__name__)
        finally:
            writer.close()

    server = await asyncio.start_unix_server(serve, path=str(path))
    try:
        yield
    finally:
        server.close()
        await server.wait_closed()
        path.unlink(missing_ok=True)


async def ask(path: Path, word: str, timeout_s: float) -> bytes:
    async with asyncio.timeout(timeout_s):
        reader, writer = await asyncio.open_unix_connection(str(path))
        try:
            writer.write(word.encode() + b"\n")
            await writer.drain()
            return await reader.read()
        finally:
            writer.close()


async def ask_siblings(board: Board, word: str, timeout_s: float = 2.0) -> dict[int, bytes]:
    """Every other live worker's answer to ``word``, by row (those that answered in time)."""
    rows = [row for row in board.owners() if row != board.row]
    answers = await asyncio.gather(
        *(ask(socket_path(board.folder, row), word, timeout_s) for row in rows),
        return_exceptions=True,
    )
    found: dict[int, bytes] = {}
    for row, answer in zip(rows, answers, strict=True):
        if isinstance(answer, bytes):
            found[row] = answer
        else:
            log.debug("worker %d did not answer %r: %s", row, word, type(answer).__name__)
    return found
