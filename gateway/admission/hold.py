"""How long a queued request waits for a slot, from who holds the slots and for how long.

Algorithm: the pool keeps the hold times (admission to release) of its last ``window``
releases, sorted, and when each current holder took its slot. Before the first release the
sample is one hold of ``prior_s``, a conservative guess (a long generation), so a cold pool
does not promise short waits it has never seen; an idle pool keeps its sample and never
reads as stalled.

A holder that has held its slot for ``e`` seconds gives it back within ``t`` more seconds
with the share of the sampled holds longer than ``e`` that end by ``e + t``: one still
running after the short ones have finished is one of the long ones (a few long generations
hold slots while short ones churn); one running longer than every sampled hold is expected
to run as long again. Summed over the holders, these give the expected number of releases
by each time ``t`` (on a geometric grid of ``_GRID`` points), and the ``j``-th release is expected
when that number reaches ``j - 1/2``. (Not each holder's own expected end, sorted: eight
slots taken together end, on average, much sooner than eight times the mean.)

With ``slots`` slots, the waiter at ``position`` (0: next) gets the slot of the
``position + 1``-th release that frees one; the releases of holders beyond ``slots`` (sent
before the engines' batch limit was learned, or whose slots went with a replica) free none;
a slot without a holder here is asked about only when it cannot be had (the cluster's
leases, the prefill budget) and counts as just taken. Past the releases of the current
holders, each slot frees again a mean hold after its last release:

    wait(position) = release(drained + position + 1)      while the holders last
                   = wait(position - slots) + mean hold   after

Calibration: releases do not come exactly when they are expected, and a waiter
admitted on the expected wait would often be refused later, after waiting. ``wait_s`` is
therefore the expected wait times the 90th percentile of observed / expected wait over past
waiters, tracked online with the stochastic quantile update (as in ``backends/ttft.py``)

    q <- q + eta * (0.9 - [observed / expected < q]),    q >= 1,

so most waiters admitted on the prediction get their slot in time and a refusal comes at
arrival instead.

Parameters
    ``prior_s``  hold time assumed before any release, seconds (> 0).
    ``window``   how many of the latest hold times are kept (>= 1).
    ``eta``      step of the calibration quantile per observed wait.
"""

from __future__ import annotations

import bisect
import math
from collections import deque

import numpy as np

_GRID = 256  # time points the expected number of releases is evaluated at
_FINEST_S = 0.001  # the first of them after 0


class HoldTimes:
    """Slot holds of one pool: its holders and its recent hold times. Not thread-safe."""

    __slots__ = ("_eta", "_holders", "_order", "_prior", "_sorted", "ratio_p90", "releases")

    def __init__(self, *, prior_s: float = 5.0, window: int = 256, eta: float = 0.05) -> None:
        if not (math.isfinite(prior_s) and prior_s > 0.0):
            raise ValueError(f"prior_s must be a positive number, got {prior_s}")
        if window < 1:
            raise ValueError(f"window must be at least 1, got {window}")
        self._prior = prior_s
        self._order: deque[float] = deque(maxlen=window)  # hold times, oldest first
        self._sorted: list[float] = []  # the same, sorted
        self._holders: list[float] = []  # when each current holder took its slot, sorted
        self._eta = eta
        self.ratio_p90 = 1.0  # observed / expected wait, 90th percentile (at least 1)
        self.releases = 0

    # what is observed

    def start(self, now: float) -> None:
        """A slot was taken at ``now``."""
        bisect.insort(self._holders, now)

    def end(self, now: float, held_s: float | None) -> None:
        """A slot taken ``held_s`` ago was given back (``None``: the latest taken)."""
        if not self._holders:
            return
        if held_s is None or not math.isfinite(held_s):
            self._holders.pop()
            return
        started = now - held_s
        i = bisect.bisect_left(self._holders, started)
        # The nearest start: permits count their hold from when the waiter woke up.
        if i == len(self._holders) or (
            i > 0 and started - self._holders[i - 1] <= self._holders[i] - started
        ):
            i -= 1
        del self._holders[i]

    def on_release(self, held_s: float) -> None:
        if not (math.isfinite(held_s) and held_s >= 0.0):
            return
        if len(self._order) == self._order.maxlen:
            del self._sorted[bisect.bisect_left(self._sorted, self._order[0])]
        self._order.append(held_s)
        bisect.insort(self._sorted, held_s)
        self.releases += 1

    def on_wait(self, observed_s: float, expected_s: float) -> None:
        """A waiter got its slot (or gave up) after ``observed_s``; ``expected_s`` was its
        uncalibrated wait when it joined the queue."""
        if not (math.isfinite(observed_s) and math.isfinite(expected_s)) or expected_s <= 0.0:
            return
        below = observed_s / expected_s < self.ratio_p90
        self.ratio_p90 = max(1.0, self.ratio_p90 + self._eta * (0.9 - (1.0 if below else 0.0)))

    # what is predicted

    @property
    def mean_s(self) -> float:
        """How long a slot taken now is expected to be held."""
        return sum(self._sorted) / len(self._sorted) if self._sorted else self._prior

    def served_mean_s(self, now: float) -> float:
        """Mean hold for the pool's service rate (slots over it, ``saturation.py``). While
        fewer releases are sampled than slots are held, the sample is the holds that ended
        first, the short ones (quick answers end while long ones hold the other slots), and
        their plain mean would promise a drain the pool does not have: the time the current
        holders have held so far is added to the sampled holds, over the sampled releases
        (the censored-data estimate). Past that, the plain mean."""
        if not self._sorted:
            return self._prior
        total = sum(self._sorted)
        if len(self._sorted) < len(self._holders):
            total += sum(max(0.0, now - started) for started in self._holders)
        return total / len(self._sorted)

    @property
    def holders(self) -> int:
        return len(self._holders)

    def expected_waits(self, count: int, slots: int, now: float) -> list[float]:
        """Seconds until each of the next ``count`` waiters gets a slot (uncalibrated)."""
        if slots <= 0:
            return [math.inf] * count
        ages = [max(0.0, now - started) for started in self._holders]
        # A slot without a holder here is asked about only when it cannot be had (the
        # cluster's leases, the prefill budget): held as if just taken.
        ages += [0.0] * max(0, slots - len(ages))
        drained = len(ages) - slots  # releases that free no slot: the first ones
        waits = self._release_times(ages)[drained:]
        mean = self.mean_s
        while len(waits) < count:
            waits.append(waits[len(waits) - slots] + mean)  # that slot's next holder's turn
        return waits[:count]

    def _release_times(self, ages: list[float]) -> list[float]:
        """When the 1st, 2nd, ... of holders of these ages is expected to give its slot
        back: the first time the expected number of releases reaches 0.5, 1.5, ..."""
        sample = np.asarray(self._sorted or [self._prior])
        held = np.asarray(ages)
        shorter = np.searchsorted(sample, held, side="right")
        longer = len(sample) - shorter
        horizon = max(float(sample[-1]), 2.0 * float(held.max()), _FINEST_S)
        # Geometric, so one holder stuck for minutes does not coarsen everyone else's
        # seconds: each point is a few percent past the one before (conservative: a release
        # is placed at the first point past it).
        grid = np.concatenate(([0.0], np.geomspace(_FINEST_S, horizon, _GRID - 1)))
        ended = np.searchsorted(sample, held[:, None] + grid[None, :], side="right")
        share = (ended - shorter[:, None]) / np.maximum(longer, 1)[:, None]
        # Held longer than every sampled hold: as long again.
        past = (grid[None, :] >= held[:, None]).astype(float)
        expected = np.where((longer > 0)[:, None], share, past).sum(axis=0)
        at = np.searchsorted(expected, np.arange(len(ages)) + 0.5, side="left")
        return [float(grid[min(i, _GRID - 1)]) for i in at]

    def expected_s(self, position: float, slots: int, now: float) -> float:
        """Seconds until the waiter at ``position`` gets a slot (between two whole
        positions: in proportion, for the queue's weighted lanes)."""
        whole = max(0, math.floor(position))
        waits = self.expected_waits(whole + 2, slots, now)
        share = max(0.0, position - whole)
        if share == 0.0:
            return waits[whole]
        return waits[whole] + share * (waits[whole + 1] - waits[whole])

    def wait_s(self, position: float, slots: int, now: float) -> float:
        """The calibrated wait: exceeded by about one waiter in ten."""
        return self.expected_s(position, slots, now) * self.ratio_p90
