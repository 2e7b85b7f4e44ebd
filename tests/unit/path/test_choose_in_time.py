"""``choose.in_time``: a request with an admission slot that finds every replica at its cap
looks again every ``SLOT_POLL_S`` until its give-up time, on a manual clock (no sleeps)."""

from __future__ import annotations

import pytest

from gateway.errors import ServiceUnavailable
from gateway.path.exchange.choose import SLOT_POLL_S, in_time

FULL = ServiceUnavailable("Every backend is at its max_inflight.", code="pool_saturated")
DOWN = ServiceUnavailable("No healthy backend.", code="no_healthy_backend")


class Replicas:
    """Full for the first ``full`` looks (raising ``error``), then free; a clock that the
    sleeps move."""

    def __init__(self, full: int, error: ServiceUnavailable = FULL) -> None:
        self.full, self.error, self.looks, self.now = full, error, 0, 0.0
        self.asked_until = 0

    def lease(self) -> str:
        self.looks += 1
        if self.looks <= self.full:
            raise self.error
        return "lease"

    async def sleep(self, seconds: float) -> None:
        self.now += seconds


# id -> (full for so many looks, the error, give-up time; None: may not wait) ->
# (leased, looks, when it ended)
CASES: dict[str, tuple[int, ServiceUnavailable, float | None, tuple[bool, int, float]]] = {
    "a free replica: at once": (0, FULL, 1.0, (True, 1, 0.0)),
    "full twice, then free: two polls": (2, FULL, 1.0, (True, 3, 2 * SLOT_POLL_S)),
    "full past its give-up time": (99, FULL, 3.5 * SLOT_POLL_S, (False, 4, 3 * SLOT_POLL_S)),
    "full, no give-up time (a failed attempt): at once": (99, FULL, None, (False, 1, 0.0)),
    "no healthy replica: not a wait": (99, DOWN, 1.0, (False, 1, 0.0)),
}  # fmt: skip


@pytest.mark.parametrize(("full", "error", "until", "ends"), CASES.values(), ids=CASES.keys())
async def test_a_slot_from_admission_waits_for_a_replicas(
    full: int, error: ServiceUnavailable, until: float | None, ends: tuple[bool, int, float]
) -> None:
    replicas = Replicas(full, error)

    def give_up() -> float | None:
        replicas.asked_until += 1
        return until

    lease = in_time(replicas.lease, give_up, lambda: replicas.now, replicas.sleep)
    if ends[0]:
        leased = await lease == "lease"
    else:
        with pytest.raises(ServiceUnavailable) as raised:
            await lease
        assert raised.value is error
        leased = False
    assert (leased, replicas.looks) == ends[:2]
    assert replicas.now == pytest.approx(ends[2])
    assert replicas.asked_until <= 1  # asked once, and only when the replicas were full
    assert (replicas.asked_until == 0) == (full == 0 or error is DOWN)
