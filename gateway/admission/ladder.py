"""The overload ladder: how far a pool is overloaded, and what that means for one request.

A ``Ladder`` is an ordered tuple of ``Step`` s, mildest first, e.g. degrade (shorter answers,
the small model), then shed sheddable requests, then shed standard ones. Steps are cumulative:
level ``i`` means ``steps[:i]`` are active, level 0 is normal service.

Signals (``Signals``, a snapshot of one pool)
    ``queue_depth``       tickets waiting in the gateway's admission queue.
    ``estimated_wait_s``  estimated queueing time of a new request (``None``: unknown).
    ``backend_waiting``   summed waiting requests scraped from the pool's replicas.
    ``kv_usage``          KV-cache usage of the pool, 0..1.

Entering (``Ladder.step``)
    A step is *reached* when ANY of its given thresholds is reached (``signal >= threshold``).
    The level rises at once to the highest reached step (steps below it come along).

Leaving, with hysteresis
    A step is *clear* when ALL its given signals are below ``hysteresis * threshold``. When
    no step above the current level is reached, the level falls one step at a time while
    the top active step is clear, and stops at the first one that is not. Between
    ``hysteresis * threshold`` and ``threshold`` the level holds, so a signal hovering
    around a threshold does not flap.

An unknown signal (``estimated_wait_s is None``) neither reaches a step nor keeps one active.

Verdict (``verdict``) for one request, given the active actions
    * ``CRITICAL`` is never shed by the ladder;
    * ``SHEDDABLE`` is shed from ``SHED_SHEDDABLE`` on (and by ``SHED_STANDARD``: shedding a
      class sheds every class below it);
    * ``STANDARD`` is shed from ``SHED_STANDARD`` on;
    * a request not shed is degraded while ``DEGRADE`` is active, else admitted.

Parameters
    ``Step``    ``action`` and at least one threshold (``queue_depth >= 0``, ``wait_s >= 0``,
                ``backend_waiting >= 0``, ``kv_usage`` in [0, 1]).
    ``Ladder``  ``steps`` (may be empty: never overloaded), ``hysteresis`` in (0, 1]
                (1: leave as soon as every signal is below its threshold).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from gateway.admission.queue import Priority
from gateway.schema import LadderStep

Verdict = Literal["admit", "degrade", "shed"]


class Action(StrEnum):
    DEGRADE = "degrade"
    SHED_SHEDDABLE = "shed_sheddable"
    SHED_STANDARD = "shed_standard"


@dataclass(frozen=True, slots=True)
class Signals:
    queue_depth: int
    estimated_wait_s: float | None
    backend_waiting: float
    kv_usage: float


def _check_threshold(name: str, value: float | None, upper: float = math.inf) -> None:
    if value is not None and not 0.0 <= value <= upper:  # also rejects NaN
        bound = "a number >= 0" if upper == math.inf else f"in [0, {upper:g}]"
        raise ValueError(f"{name} must be {bound}, got {value}")


@dataclass(frozen=True, slots=True)
class Step:
    action: Action
    queue_depth: int | None = None
    wait_s: float | None = None
    backend_waiting: float | None = None
    kv_usage: float | None = None

    def __post_init__(self) -> None:
        _check_threshold("queue_depth", self.queue_depth)
        _check_threshold("wait_s", self.wait_s)
        _check_threshold("backend_waiting", self.backend_waiting)
        _check_threshold("kv_usage", self.kv_usage, upper=1.0)
        if not self._pairs(Signals(0, 0.0, 0.0, 0.0)):
            raise ValueError(f"thresholds must include at least one for {self.action.value}")

    def reached(self, signals: Signals) -> bool:
        """Whether ANY given threshold is reached."""
        return any(value >= threshold for value, threshold in self._pairs(signals))

    def clear(self, signals: Signals, hysteresis: float) -> bool:
        """Whether ALL given signals are below ``hysteresis * threshold``."""
        return all(value < hysteresis * threshold for value, threshold in self._pairs(signals))

    def _pairs(self, signals: Signals) -> list[tuple[float, float]]:
        """(signal, threshold) for each threshold given whose signal is known."""
        candidates = (
            (signals.queue_depth, self.queue_depth),
            (signals.estimated_wait_s, self.wait_s),
            (signals.backend_waiting, self.backend_waiting),
            (signals.kv_usage, self.kv_usage),
        )
        return [
            (float(value), float(threshold))
            for value, threshold in candidates
            if value is not None and threshold is not None
        ]


@dataclass(frozen=True, slots=True)
class Ladder:
    steps: tuple[Step, ...]
    hysteresis: float = 0.8

    def __post_init__(self) -> None:
        if not 0.0 < self.hysteresis <= 1.0:  # also rejects NaN
            raise ValueError(f"hysteresis must be in (0, 1], got {self.hysteresis}")

    def step(self, signals: Signals, current: int) -> int:
        """The new level (0 normal, ``i``: ``steps[:i]`` active) from the current one.

        ``current`` outside ``[0, len(steps)]`` (steps removed by a policy reload) is clamped.
        """
        level = max(0, min(current, len(self.steps)))
        reached = max(
            (index + 1 for index, step in enumerate(self.steps) if step.reached(signals)),
            default=0,
        )
        if reached >= level:
            return reached
        while level > reached and self.steps[level - 1].clear(signals, self.hysteresis):
            level -= 1
        return level

    def actions(self, level: int) -> tuple[Action, ...]:
        """The actions active at ``level`` (clamped to ``[0, len(steps)]``)."""
        return tuple(step.action for step in self.steps[: max(0, level)])


def verdict(actions: Sequence[Action], priority: Priority) -> Verdict:
    """What the active ``actions`` mean for a request of ``priority``."""
    active = set(actions)
    if priority is Priority.SHEDDABLE and active & {Action.SHED_SHEDDABLE, Action.SHED_STANDARD}:
        return "shed"
    if priority is Priority.STANDARD and Action.SHED_STANDARD in active:
        return "shed"
    return "degrade" if Action.DEGRADE in active else "admit"


def step_of(spec: LadderStep) -> Step:
    """A policy rung as a ``Step``."""
    return Step(
        action=Action(spec.action),
        queue_depth=spec.queue_depth,
        wait_s=spec.wait_s,
        backend_waiting=spec.backend_waiting,
        kv_usage=spec.kv_usage,
    )
