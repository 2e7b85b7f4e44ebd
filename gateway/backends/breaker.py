"""Per-backend circuit breaker (passive outlier ejection) built from real request outcomes.

This is the algorithm only: it decides *whether* a backend may receive traffic; the caller
enforces the decision (filters the backend out of the candidate set) and reports outcomes.
It follows Envoy's outlier detection and the resilience4j / Hystrix breakers.

States
    ``CLOSED``     normal service. Every verdict (success or failure) is recorded.
    ``OPEN``       ejected until ``ejected_until``; ``allows()`` is ``False``.
    ``HALF_OPEN``  the cooldown has passed; up to ``half_open_probes`` requests are let through
                   to test the backend. The first verdict decides: a success closes the breaker,
                   a failure ejects it again for twice as long.

``OPEN`` turns into ``HALF_OPEN`` lazily: every public method and property reads the injected
clock first, so no timer or background task is needed.

Tripping (``CLOSED`` -> ``OPEN``), checked on every failure; either rule is enough:

* ``consecutive_failures`` failures in a row (any success resets the streak), or
* over the last ``window`` verdicts, the share of failures reaches ``failure_rate``, once the
  window holds at least ``min_requests`` verdicts (so two failures out of three requests after
  a quiet spell do not eject a backend).

Tripping clears the window and the streak, so a backend comes back with a clean record.

Cooldown: the first ejection lasts ``cooldown_s``. A failure while ``HALF_OPEN`` is a
consecutive re-ejection and doubles the previous length, capped at ``max_cooldown_s``. A
success while ``HALF_OPEN`` closes the breaker and resets the cooldown to ``cooldown_s``.

Outcomes
    ``on_start``    a request was dispatched to the backend; while ``HALF_OPEN`` it occupies
                    one of the ``half_open_probes`` probe slots.
    ``on_success``  the backend answered well (a verdict).
    ``on_failure``  the backend failed: connection error, timeout, 5xx (a verdict).
    ``on_neutral``  finished without a verdict on the backend (client went away, 4xx): frees a
                    probe slot and records nothing.

Outcomes that arrive while ``OPEN`` are ignored (they belong to requests dispatched before the
ejection). While ``HALF_OPEN`` an outcome with no probe in flight is ignored for the same reason;
with probes in flight the breaker cannot tell a stale request from a probe, and takes the
verdict as the probe's.

Parameters (``BreakerSettings``)
    ``consecutive_failures``  eject after this many failures in a row (>= 1).
    ``failure_rate``          eject when the failure share over the window reaches this, in (0, 1].
    ``window``                number of most recent verdicts the rate is computed over (>= 1).
    ``min_requests``          verdicts needed in the window before the rate rule applies,
                              1 <= min_requests <= window.
    ``cooldown_s``            length of the first ejection, seconds (> 0).
    ``max_cooldown_s``        cap on the doubled ejection length, seconds (>= cooldown_s).
    ``half_open_probes``      requests let through at once while half-open (>= 1).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum


class BreakerState(StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


@dataclass(frozen=True, slots=True)
class BreakerSettings:
    consecutive_failures: int = 5
    failure_rate: float = 0.5
    window: int = 20
    min_requests: int = 10
    cooldown_s: float = 10.0
    max_cooldown_s: float = 120.0
    half_open_probes: int = 1

    def __post_init__(self) -> None:
        if self.consecutive_failures < 1:
            raise ValueError(f"consecutive_failures must be >= 1, got {self.consecutive_failures}")
        if not 0.0 < self.failure_rate <= 1.0:  # also rejects NaN
            raise ValueError(f"failure_rate must be in (0, 1], got {self.failure_rate}")
        if self.window < 1:
            raise ValueError(f"window must be >= 1, got {self.window}")
        if not 1 <= self.min_requests <= self.window:
            raise ValueError(
                f"min_requests must be in [1, window={self.window}], got {self.min_requests}"
            )
        if not (math.isfinite(self.cooldown_s) and self.cooldown_s > 0.0):
            raise ValueError(f"cooldown_s must be a positive number, got {self.cooldown_s}")
        if not (math.isfinite(self.max_cooldown_s) and self.max_cooldown_s >= self.cooldown_s):
            raise ValueError(
                f"max_cooldown_s must be >= cooldown_s={self.cooldown_s}, got {self.max_cooldown_s}"
            )
        if self.half_open_probes < 1:
            raise ValueError(f"half_open_probes must be >= 1, got {self.half_open_probes}")


class CircuitBreaker:
    """One backend's breaker. Not thread-safe; meant for a single event loop."""

    __slots__ = (
        "_clock",
        "_consecutive",
        "_cooldown_s",
        "_ejected_until",
        "_ejections",
        "_failures_in_window",
        "_probes_in_flight",
        "_settings",
        "_state",
        "_window",
    )

    def __init__(self, settings: BreakerSettings, clock: Callable[[], float]) -> None:
        self._settings = settings
        self._clock = clock
        self._state = BreakerState.CLOSED
        self._window: deque[bool] = deque(maxlen=settings.window)  # True = failure
        self._failures_in_window = 0
        self._consecutive = 0
        self._cooldown_s = settings.cooldown_s  # length of the current or next ejection
        self._ejected_until: float | None = None
        self._ejections = 0
        self._probes_in_flight = 0

    # -- reading -------------------------------------------------------------------------

    @property
    def settings(self) -> BreakerSettings:
        return self._settings

    @property
    def state(self) -> BreakerState:
        self._refresh()
        return self._state

    @property
    def ejected_until(self) -> float | None:
        """Clock time the current ejection ends; ``None`` unless ``OPEN``."""
        self._refresh()
        return self._ejected_until

    @property
    def ejections(self) -> int:
        """Times the breaker has tripped (``CLOSED`` or ``HALF_OPEN`` -> ``OPEN``)."""
        return self._ejections

    def allows(self) -> bool:
        """Whether a new request may be dispatched to this backend now."""
        self._refresh()
        if self._state is BreakerState.CLOSED:
            return True
        if self._state is BreakerState.OPEN:
            return False
        return self._probes_in_flight < self._settings.half_open_probes

    # -- outcomes ------------------------------------------------------------------------

    def on_start(self) -> None:
        self._refresh()
        if self._state is BreakerState.HALF_OPEN:
            self._probes_in_flight += 1

    def on_success(self) -> None:
        self._refresh()
        if self._state is BreakerState.CLOSED:
            self._record(failed=False)
            self._consecutive = 0
        elif self._state is BreakerState.HALF_OPEN and self._probes_in_flight > 0:
            self._close()

    def on_failure(self) -> None:
        self._refresh()
        if self._state is BreakerState.CLOSED:
            self._record(failed=True)
            self._consecutive += 1
            if self._should_trip():
                self._trip()
        elif self._state is BreakerState.HALF_OPEN and self._probes_in_flight > 0:
            self._cooldown_s = min(2.0 * self._cooldown_s, self._settings.max_cooldown_s)
            self._trip()

    def on_neutral(self) -> None:
        self._refresh()
        if self._state is BreakerState.HALF_OPEN and self._probes_in_flight > 0:
            self._probes_in_flight -= 1

    # -- internals -----------------------------------------------------------------------

    def _refresh(self) -> None:
        if (
            self._state is BreakerState.OPEN
            and self._ejected_until is not None
            and self._clock() >= self._ejected_until
        ):
            self._state = BreakerState.HALF_OPEN
            self._ejected_until = None
            self._probes_in_flight = 0

    def _record(self, *, failed: bool) -> None:
        window = self._window
        if len(window) == window.maxlen and window[0]:
            self._failures_in_window -= 1
        window.append(failed)
        if failed:
            self._failures_in_window += 1

    def _should_trip(self) -> bool:
        settings = self._settings
        if self._consecutive >= settings.consecutive_failures:
            return True
        seen = len(self._window)
        # Division is correctly rounded, so 3/10 >= 0.3 holds where 3 >= 0.3 * 10 would not.
        return (
            seen >= settings.min_requests
            and self._failures_in_window / seen >= settings.failure_rate
        )

    def _trip(self) -> None:
        self._state = BreakerState.OPEN
        self._ejected_until = self._clock() + self._cooldown_s
        self._ejections += 1
        self._probes_in_flight = 0
        self._clear_record()

    def _close(self) -> None:
        self._state = BreakerState.CLOSED
        self._ejected_until = None
        self._cooldown_s = self._settings.cooldown_s
        self._probes_in_flight = 0
        self._clear_record()

    def _clear_record(self) -> None:
        self._window.clear()
        self._failures_in_window = 0
        self._consecutive = 0
