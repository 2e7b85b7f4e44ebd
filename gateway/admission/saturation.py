"""Whether a pool keeps up: nominal, saturated or overloaded, from evidence.

States:

- ``nominal``: the fleet keeps up. A request is refused only past its deadline or at a hard
  cap; one that will be somewhat late is served.
- ``saturated``: work waits and arrives faster than the pool drains it. Waiting is
  evidence, not a guess: the gateway's queue while every replica is at a limit it has shown
  (its known batch, or the policy's cap; never a probe of its room), or an engine's own
  fresh report of requests waiting inside it. "Faster" is the arrival rate above
  ``enter_ratio`` times the drain rate. Requests that cannot meet their objective are
  refused.
- ``overloaded``: saturated, and a standard request arriving now would wait past the pool's
  default deadline.

Rates: every arrival (a request asking the pool) and every completion (a slot given back)
adds ``1 / tau_s`` to a rate that decays by ``exp(-dt / tau_s)`` on the injected clock, so
each reads as events per second over about the last ``tau_s``. The drain rate is what the
pool can complete: the larger of its recent completions and its slots over the mean time a
slot is held (Little's law; given by the controller once a few holds were seen: the slots
the replicas have shown they run at once, one whose batch is still probed counting the most
it was seen taking, so that one replica's probe does not leave the drain to the completions
alone; the mean hold is ``hold.served_mean_s``: it counts
what the current holders have held so far, or the first quick answers of a burst would
promise a drain the pool does not have), so a burst after a quiet spell is not taken for an
overload while its first completions are still to come. A pool leaves
``saturated`` when nothing waits any more, or when arrivals fall to ``exit_ratio`` times
the drain rate or below (hysteresis), unless the backlog itself is late (``backlog_late``,
the controller's: a waiter's first token, or a new standard request's slot, past its
objective). Arrivals that stopped do not make a burst's backlog servable in time: a burst's
first seconds at 2x capacity build a backlog before the rates can tell it from a clump of
1x, and its waiters are refused against their objective until what is left can be served
within it.

``calm_s``: how long since a reading last found the pool saturated (or overloaded). Hedging
waits until it passes the policy's ``hedge_calm_s`` (``recovery/hedging.py``): under bursts
the state falls back to nominal in each lull, which is not spare capacity.

With several workers on one host (``serve --workers``), the rates are the host's: each
worker's own plus its siblings' (``elsewhere``, their rates decayed to now).

Noise: arrivals at exactly the drain rate are random (Poisson), and over ``tau_s`` their
weighted count ``arrivals * tau_s`` has mean ``drain * tau_s`` and standard deviation
``sqrt(drain * tau_s / 2)``. Entering, "faster" therefore means past the ratio by
``noise_z`` of those standard deviations as well: ``arrivals * tau > ratio * drain * tau + noise_z *
sqrt(drain * tau / 2)``, so a clump of a burst at 1x capacity (the mean count at a 2.63/s
drain is 5.3, its deviation 1.6) is not taken for saturation, while a sustained 2x or more
is (onset about 1.9 s into a 3x burst at that drain, 1.4 s without the margin).

Parameters: ``tau_s`` (2 s), ``enter_ratio`` (1.5), ``exit_ratio`` (1.1), ``noise_z`` (1).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum


class State(StrEnum):
    NOMINAL = "nominal"
    SATURATED = "saturated"
    OVERLOADED = "overloaded"


@dataclass(frozen=True, slots=True)
class PoolState:
    """A pool's state and why: what the dashboard shows and refusals cite."""

    state: State
    reason: str
    arrivals_per_s: float
    drain_per_s: float

    @property
    def saturated(self) -> bool:
        return self.state is not State.NOMINAL


@dataclass(frozen=True, slots=True)
class Waiting:
    """The evidence that work waits in a pool, as the controller reads it."""

    queued: int  # in the gateway's queue, behind replicas at a limit they have shown
    in_engines: float  # requests the engines' fresh reports say wait inside them

    @property
    def any(self) -> bool:
        return self.queued > 0 or self.in_engines > 0

    def describe(self) -> str:
        parts = []
        if self.queued:
            parts.append(f"{self.queued} waiting in the gateway")
        if self.in_engines:
            parts.append(f"{self.in_engines:g} waiting in the engines")
        return ", ".join(parts) or "nothing waiting"


class Rate:
    """Events per second over about the last ``tau_s``, exponentially weighted."""

    __slots__ = ("_at", "_tau", "_value")

    def __init__(self, tau_s: float) -> None:
        if not (math.isfinite(tau_s) and tau_s > 0):
            raise ValueError(f"tau_s must be a positive number, got {tau_s}")
        self._tau = tau_s
        self._value = 0.0
        self._at = -math.inf

    def add(self, now: float, count: float = 1.0) -> None:
        self._value = self.read(now) + count / self._tau
        self._at = now

    @property
    def tau_s(self) -> float:
        return self._tau

    def shown(self) -> tuple[float, float]:
        """(value, when): what a sibling decays to its own now (``value * exp(-dt / tau)``)."""
        return self._value, self._at

    def read(self, now: float) -> float:
        if self._at == -math.inf:
            return 0.0
        return self._value * math.exp(-max(0.0, now - self._at) / self._tau)


class Saturation:
    """One pool's detector: feed it arrivals and completions, ask it for the state."""

    __slots__ = ("_enter", "_exit", "_saturated", "_saturated_at", "_z", "arrivals", "completions")

    def __init__(
        self,
        *,
        tau_s: float = 2.0,
        enter_ratio: float = 1.5,
        exit_ratio: float = 1.1,
        noise_z: float = 1.0,
    ) -> None:
        if not 0 < exit_ratio <= enter_ratio:
            raise ValueError("need 0 < exit_ratio <= enter_ratio")
        if not (math.isfinite(noise_z) and noise_z >= 0):
            raise ValueError(f"noise_z must be a number >= 0, got {noise_z}")
        self.arrivals = Rate(tau_s)
        self.completions = Rate(tau_s)
        self._enter = enter_ratio
        self._exit = exit_ratio
        self._z = noise_z
        self._saturated = False
        self._saturated_at = -math.inf

    def faster(self, arrivals: float, drain: float, ratio: float) -> bool:
        """Arrivals past ``ratio`` times the drain by more than their Poisson noise."""
        tau = self.arrivals.tau_s
        margin = self._z * math.sqrt(max(0.0, drain) * tau / 2.0)
        return arrivals * tau > ratio * drain * tau + margin

    def calm_s(self, now: float) -> float:
        """Seconds since ``state`` last found the pool saturated or overloaded (0: a reading
        at ``now`` did; inf: none ever did)."""
        return max(0.0, now - self._saturated_at)

    def arrived(self, now: float) -> None:
        self.arrivals.add(now)

    def completed(self, now: float) -> None:
        self.completions.add(now)

    def state(
        self,
        now: float,
        waiting: Waiting,
        wait_s: Callable[[], float | None],
        deadline_s: float | None,
        capacity_per_s: float = 0.0,
        elsewhere: tuple[float, float] = (0.0, 0.0),
        backlog_late: Callable[[], bool] = lambda: False,
    ) -> PoolState:
        """The state now; ``wait_s``: a standard request's predicted wait for a slot (None:
        not known; asked only of a saturated pool), ``deadline_s``: the pool's default
        deadline for it (None: none), ``capacity_per_s``: slots over the mean hold,
        ``elsewhere``: the arrival and completion rates of the host's other workers,
        ``backlog_late``: whether what waits is late (asked only of a saturated pool whose
        arrivals fell)."""
        arrivals = self.arrivals.read(now) + elsewhere[0]
        drain = max(self.completions.read(now) + elsewhere[1], capacity_per_s)
        if self._saturated:  # leaves once arrivals fall to exit_ratio x drain: no margin
            faster = arrivals > self._exit * drain or (waiting.any and backlog_late())
        else:
            faster = self.faster(arrivals, drain, self._enter)
        self._saturated = waiting.any and faster
        if self._saturated:
            self._saturated_at = max(self._saturated_at, now)
        rates = f"{arrivals:.1f}/s arriving, {drain:.1f}/s draining"
        if not self._saturated:
            why = "keeping up" if not waiting.any else "draining"
            return PoolState(State.NOMINAL, f"{why}: {rates}", arrivals, drain)
        reason = f"{waiting.describe()}; {rates}"
        wait = None if deadline_s is None else wait_s()
        if wait is not None and deadline_s is not None and wait > deadline_s:
            reason += f"; a new request would wait {wait:.1f} s, past {deadline_s:.1f} s"
            return PoolState(State.OVERLOADED, reason, arrivals, drain)
        return PoolState(State.SATURATED, reason, arrivals, drain)
