"""One cancellation trial's outcome, one phase's run, and the limits every phase shares.

A ``Trial`` is one client departure: the delay until the upstream (or the gateway's queue)
saw it, ``None`` past the bound, and the checks made on the way. Constants: the phases, the
50 ms target, how long a request may take to arrive (``ARRIVE_TIMEOUT_S``) and how long a
missed trial waits for a late cancel (``SETTLE_S``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PHASES = ("queued", "first_token", "streaming", "non_streaming")
TARGET_S = 0.050
ARRIVE_TIMEOUT_S = 10.0
SETTLE_S = 40.0  # after a miss: how long to wait for the upstream to finish or notice late
Body = dict[str, Any]
Headers = tuple[tuple[str, str], ...]  # extra request headers (a peer's API key)


@dataclass
class Trial:
    delay_s: float | None  # None: not seen within the bound
    in_phase: bool | None = None  # checked where the phase is not guaranteed by construction
    idle_after: bool | None = None  # sim: the engine had no work left after the trial
    # first_token: an SSE event had reached the client socket when it left (peeked, not read)
    saw_event: bool | None = None
    # queued: the upstream received the request (it must not), and how long the /metrics
    # scrape that saw the queue empty took (the resolution of the delay)
    forwarded: bool | None = None
    poll_s: float | None = None


@dataclass
class PhaseRun:
    upstream: str
    phase: str
    trials: list[Trial] = field(default_factory=list)
    stopped_early: bool = False
    seconds: float = 0.0
    holders: int = 0  # queued: long requests that held the slot, one after the other
