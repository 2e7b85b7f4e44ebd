"""What a backend's live state (``state.py``) reaches outside itself through: the host's
board, where a backend's counts meet those of the host's other workers, and the requests
sent to it that can still be taken back. Protocols only; the implementations live with
their owners (``gateway/host/shares.py``, ``gateway/path/exchange/race.py``)."""

from __future__ import annotations

from typing import Protocol


class Movable(Protocol):
    """A request sent here that has no first token yet, and can still be taken back (with
    how many of ours wait ahead of it in the engine's queue)."""

    def take_back(self, ahead: int) -> None: ...


class HostShare(Protocol):
    """This backend as the host's other workers have it (``gateway/host/shares.py``)."""

    def publish(self, inflight: int, pending: int, pending_tokens: float) -> None: ...

    def inflight(self) -> float: ...

    def pending(self) -> float: ...

    def pending_tokens(self) -> float: ...

    def publish_dropped(self, dropped: int, until: float) -> None: ...

    def dropped(self, now: float) -> float: ...
