"""How long a queued request waits for a slot, from how long slots are held.

Algorithm: the mean time a request holds its slot (admission to release), an exponentially
weighted mean over releases (``alpha`` per release, not per second: an idle pool keeps its
estimate and never reads as stalled). Before the first release it is ``prior_s``, a
conservative guess (a long generation), so a cold pool does not promise short waits it has
never seen. The first release replaces it; then the mean is a plain running mean of the
releases until there are ``1 / alpha`` of them (weight ``max(alpha, 1 / n)`` for the n-th),
so no single early release dominates it.

With ``slots`` slots all busy, the request at ``position`` in the queue (0: next) gets a slot
after ``position + 1`` releases; with releases spread evenly over a hold time, after about

    wait = (position + 1) * hold / slots

seconds. (A pool whose requests stop finishing is caught by the waiters' own give-up times,
in ``controller.py``, not by this estimate.)

Calibration: releases do not come evenly (a few long generations hold slots while short ones
churn), so the even-spread wait is low about as often as it is high, and a waiter admitted
on it would often be refused later, after waiting. ``wait_s`` is therefore the even-spread
wait times the 90th percentile of observed / even-spread wait over past waiters, tracked
online with the stochastic quantile update (as in ``backends/ttft.py``)

    q <- q + eta * (0.9 - [observed / expected < q]),    q >= 1,

so most waiters admitted on the prediction get their slot in time and a refusal comes at
arrival instead.

Parameters
    ``prior_s``  hold time assumed before any release, seconds (> 0).
    ``alpha``    weight of each new release in the mean, in (0, 1].
    ``eta``      step of the calibration quantile per observed wait.
"""

from __future__ import annotations

import math


class HoldTimes:
    """Mean slot hold time of one pool. Not thread-safe."""

    __slots__ = ("_alpha", "_eta", "_mean", "ratio_p90", "releases")

    def __init__(self, *, prior_s: float = 5.0, alpha: float = 0.2, eta: float = 0.05) -> None:
        if not (math.isfinite(prior_s) and prior_s > 0.0):
            raise ValueError(f"prior_s must be a positive number, got {prior_s}")
        if not 0.0 < alpha <= 1.0:
            raise ValueError(f"alpha must be in (0, 1], got {alpha}")
        self._mean = prior_s
        self._alpha = alpha
        self._eta = eta
        self.ratio_p90 = 1.0  # observed / even-spread wait, 90th percentile (at least 1)
        self.releases = 0

    @property
    def mean_s(self) -> float:
        return self._mean

    def on_release(self, held_s: float) -> None:
        if not (math.isfinite(held_s) and held_s >= 0.0):
            return
        # The first release replaces the prior (a guess, not a sample); then a plain running
        # mean until the EWMA's window is reached: the first releases of a burst are its
        # quickest (short answers finish first), and the EWMA would keep the very first one
        # at weight 1 - alpha, promising waits the long ones then break.
        weight = max(self._alpha, 1.0 / (self.releases + 1))
        self._mean += weight * (held_s - self._mean)
        self.releases += 1

    def expected_s(self, position: float, slots: int) -> float:
        """Seconds until the request at ``position`` gets one of ``slots`` busy slots, were
        releases spread evenly (uncalibrated)."""
        if slots <= 0:
            return math.inf
        return (position + 1) * self._mean / slots

    def wait_s(self, position: float, slots: int) -> float:
        """The calibrated wait: exceeded by about one waiter in ten."""
        return self.expected_s(position, slots) * self.ratio_p90

    def on_wait(self, observed_s: float, expected_s: float) -> None:
        """A waiter got its slot (or gave up) after ``observed_s``; ``expected_s`` was its
        uncalibrated wait when it joined the queue."""
        if not (math.isfinite(observed_s) and math.isfinite(expected_s)) or expected_s <= 0.0:
            return
        below = observed_s / expected_s < self.ratio_p90
        self.ratio_p90 = max(1.0, self.ratio_p90 + self._eta * (0.9 - (1.0 if below else 0.0)))
