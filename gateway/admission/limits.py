"""Concurrency limit algorithms: how many requests a pool may have in flight at once.

Algorithms only, in the style of Netflix's ``concurrency-limits``: a ``LimitAlgorithm`` turns
samples of finished requests into a limit; the caller enforces it (holds requests in the
admission queue while ``inflight >= limit``) and reports every finished request through
``on_sample``. Nothing here reads a clock or sleeps.

A sample is ``latency_s`` (how long the request held its slot, seconds), ``inflight`` (requests
in flight when it was dispatched, itself included) and ``dropped`` (it failed in a way that
signals overload: timeout, backend 429/503, connection refused). Samples whose latency is not
a finite number ``>= 0`` carry no information and are ignored unless ``dropped``.

``StaticLimit``
    The limit never changes.

``AimdLimit`` (additive increase, multiplicative decrease, as TCP Reno)
    * ``dropped`` or ``latency_s > target_s``: ``limit = floor(limit * backoff_ratio)``;
    * else, when the limit was actually used (``inflight * 2 >= limit``):
      ``limit = limit + increase``; an idle pool says nothing about its capacity, so the
      limit does not grow then;
    * always clamped to ``[min_limit, max_limit]``.

    Parameters (``AimdSettings``): ``initial`` limit, ``min_limit >= 1``, ``max_limit >=
    min_limit`` (``initial`` within them), ``target_s > 0`` the latency above which the pool
    counts as overloaded, ``backoff_ratio`` in (0, 1), ``increase >= 1``.

``GradientLimit`` (Netflix ``Gradient2Limit``)
    Compares the long-term latency (what the pool normally does) with the short-term latency
    (what it does now). When queues build up inside the backend, short-term latency rises
    above long-term latency and the limit shrinks in proportion; when it falls, the limit
    grows by ``queue_size`` per sample, which keeps probing for more capacity. Per sample:

    * ``long`` = EWMA of latency with factor ``2 / (long_window + 1)`` (a plain mean over the
      first ``min(10, long_window)`` samples, so the first sample does not dominate);
    * ``short`` = EWMA with factor ``2 / (short_window + 1)``; the default ``short_window = 1``
      is the sample itself, as in Gradient2;
    * if ``long > 2 * short`` (latency recovered after a long overload): ``long *= 0.95``, so
      the long-term baseline comes down faster than the EWMA alone would;
    * if the pool is app-limited (``inflight * 2 < limit``) the limit is kept;
    * ``gradient = clamp(tolerance * long / short, 0.5, 1.0)`` (1.0 when ``short == 0``);
      a ``dropped`` sample has ``gradient = 0.5`` whatever its latency, does not update the
      averages (its latency is that of a failure) and is never app-limited;
    * ``new = limit * gradient + queue_size``;
      ``limit = limit * (1 - smoothing) + new * smoothing``, clamped to
      ``[min_limit, max_limit]``.

    The limit is kept as a float; ``limit`` reports its integer part. Under sustained
    overload the limit settles at ``2 * queue_size`` (the fixed point of the update with
    gradient 0.5), or ``min_limit`` if higher; ``queue_size = 0`` lets it fall to
    ``min_limit``.

    Parameters (``GradientSettings``): ``initial``, ``min_limit >= 1``, ``max_limit >=
    min_limit`` (``initial`` within them), ``smoothing`` in (0, 1], ``tolerance >= 1`` (how
    much latency growth is tolerated before the limit shrinks), ``long_window >= 1`` and
    ``short_window >= 1`` (samples), ``queue_size >= 0``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

from gateway.policy.compile import UNBOUNDED
from gateway.schema import Limit

# Absorbs float error in ``limit * backoff_ratio`` (e.g. 0.3 * 10 == 3.0000000000000004 is
# fine, but 0.7 * 30 == 20.999999999999996 must floor to 21).
_EPSILON = 1e-9
# Samples averaged plainly before the long-term EWMA takes over (Netflix uses 10).
_WARMUP_SAMPLES = 10
_MIN_GRADIENT = 0.5
_MAX_GRADIENT = 1.0


class LimitAlgorithm(Protocol):
    @property
    def limit(self) -> int: ...

    def on_sample(self, *, latency_s: float, inflight: int, dropped: bool) -> None: ...


def _usable(latency_s: float) -> bool:
    return math.isfinite(latency_s) and latency_s >= 0.0


def _check_bounds(initial: int, min_limit: int, max_limit: int) -> None:
    if min_limit < 1:
        raise ValueError(f"min_limit must be >= 1, got {min_limit}")
    if max_limit < min_limit:
        raise ValueError(f"max_limit must be >= min_limit={min_limit}, got {max_limit}")
    if not min_limit <= initial <= max_limit:
        raise ValueError(f"initial must be in [{min_limit}, {max_limit}], got {initial}")


class StaticLimit:
    """A limit that never changes."""

    __slots__ = ("_limit",)

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")
        self._limit = limit

    @property
    def limit(self) -> int:
        return self._limit

    def on_sample(self, *, latency_s: float, inflight: int, dropped: bool) -> None:
        return None


@dataclass(frozen=True, slots=True)
class AimdSettings:
    initial: int
    min_limit: int = 1
    max_limit: int = 1000
    target_s: float = 1.0
    backoff_ratio: float = 0.9
    increase: int = 1

    def __post_init__(self) -> None:
        _check_bounds(self.initial, self.min_limit, self.max_limit)
        if not (math.isfinite(self.target_s) and self.target_s > 0.0):
            raise ValueError(f"target_s must be a positive number, got {self.target_s}")
        if not 0.0 < self.backoff_ratio < 1.0:  # also rejects NaN
            raise ValueError(f"backoff_ratio must be in (0, 1), got {self.backoff_ratio}")
        if self.increase < 1:
            raise ValueError(f"increase must be >= 1, got {self.increase}")


class AimdLimit:
    """Additive increase while latency meets the target, multiplicative decrease otherwise."""

    __slots__ = ("_limit", "_settings")

    def __init__(self, settings: AimdSettings) -> None:
        self._settings = settings
        self._limit = settings.initial

    @property
    def settings(self) -> AimdSettings:
        return self._settings

    @property
    def limit(self) -> int:
        return self._limit

    def on_sample(self, *, latency_s: float, inflight: int, dropped: bool) -> None:
        settings = self._settings
        if dropped or latency_s > settings.target_s:  # +inf latency is too slow
            backed_off = math.floor(self._limit * settings.backoff_ratio + _EPSILON)
            self._limit = max(settings.min_limit, backed_off)
        elif _usable(latency_s) and inflight * 2 >= self._limit:
            self._limit = min(settings.max_limit, self._limit + settings.increase)


@dataclass(frozen=True, slots=True)
class GradientSettings:
    initial: int
    min_limit: int = 1
    max_limit: int = 1000
    smoothing: float = 0.2
    tolerance: float = 1.5
    long_window: int = 600
    queue_size: int = 4
    short_window: int = 1

    def __post_init__(self) -> None:
        _check_bounds(self.initial, self.min_limit, self.max_limit)
        if not 0.0 < self.smoothing <= 1.0:  # also rejects NaN
            raise ValueError(f"smoothing must be in (0, 1], got {self.smoothing}")
        if not (math.isfinite(self.tolerance) and self.tolerance >= 1.0):
            raise ValueError(f"tolerance must be >= 1, got {self.tolerance}")
        if self.long_window < 1:
            raise ValueError(f"long_window must be >= 1, got {self.long_window}")
        if self.queue_size < 0:
            raise ValueError(f"queue_size must be >= 0, got {self.queue_size}")
        if self.short_window < 1:
            raise ValueError(f"short_window must be >= 1, got {self.short_window}")


class GradientLimit:
    """Netflix Gradient2: shrink the limit as short-term latency rises above long-term."""

    __slots__ = ("_estimate", "_long", "_samples", "_settings", "_short")

    def __init__(self, settings: GradientSettings) -> None:
        self._settings = settings
        self._estimate = float(settings.initial)
        self._long = 0.0
        self._short = 0.0
        self._samples = 0

    @property
    def settings(self) -> GradientSettings:
        return self._settings

    @property
    def limit(self) -> int:
        return int(self._estimate)

    @property
    def estimate(self) -> float:
        """The limit before truncation to an integer."""
        return self._estimate

    @property
    def long_latency_s(self) -> float:
        """The long-term latency average (0.0 before the first usable sample)."""
        return self._long

    @property
    def short_latency_s(self) -> float:
        """The short-term latency average (0.0 before the first usable sample)."""
        return self._short

    def on_sample(self, *, latency_s: float, inflight: int, dropped: bool) -> None:
        if dropped:
            self._move(_MIN_GRADIENT)
            return
        if not _usable(latency_s):
            return
        self._observe(latency_s)
        if inflight * 2 < self._estimate:
            return  # app-limited: the pool was not pushed, so its latency says nothing
        self._move(self._gradient())

    def _observe(self, latency_s: float) -> None:
        settings = self._settings
        self._samples += 1
        warmup = min(_WARMUP_SAMPLES, settings.long_window)
        if self._samples <= warmup:
            self._long += (latency_s - self._long) / self._samples
        else:
            self._long += (latency_s - self._long) * 2.0 / (settings.long_window + 1)
        if self._samples == 1:
            self._short = latency_s
        else:
            self._short += (latency_s - self._short) * 2.0 / (settings.short_window + 1)
        if self._long > 2.0 * self._short:
            self._long *= 0.95

    def _gradient(self) -> float:
        if self._short <= 0.0:
            return _MAX_GRADIENT
        raw = self._settings.tolerance * self._long / self._short
        return max(_MIN_GRADIENT, min(_MAX_GRADIENT, raw))

    def _move(self, gradient: float) -> None:
        settings = self._settings
        target = self._estimate * gradient + settings.queue_size
        smoothed = self._estimate * (1.0 - settings.smoothing) + target * settings.smoothing
        self._estimate = max(float(settings.min_limit), min(float(settings.max_limit), smoothed))


def limit_binds(settings: Limit, capacity: int) -> bool:
    """Whether the pool's limit can ever hold a request back: an adaptive one can; a static
    one only when something caps it (a backend's ``max_inflight`` on each, or ``max_limit``).
    A limit that cannot bind needs no cluster lease (each would be granted)."""
    return settings.kind != "static" or (settings.max_limit or capacity) < UNBOUNDED


def build_limit(settings: Limit, capacity: int) -> LimitAlgorithm:
    """The policy's limit for a pool of ``capacity`` slots (its backends' max_inflight)."""
    top = settings.max_limit or capacity
    start = min(settings.initial or top, top)
    floor = min(settings.min_limit, top)  # a policy's floor above the pool's capacity
    if settings.kind == "aimd":
        return AimdLimit(
            AimdSettings(
                initial=start,
                min_limit=floor,
                max_limit=top,
                target_s=settings.target_ttft_s,
                backoff_ratio=settings.backoff_ratio,
            )
        )
    if settings.kind == "gradient":
        return GradientLimit(
            GradientSettings(
                initial=start,
                min_limit=floor,
                max_limit=top,
                tolerance=settings.tolerance,
            )
        )
    return StaticLimit(start)
