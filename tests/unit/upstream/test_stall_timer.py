"""The stall timer: one timer per budget period, re-armed on progress, a stall reported once,
a busy reader given a fresh silence, a shrinking budget honoured at once, the deadline
capping every silence. A fake clock and a fake scheduler: no waiting."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from gateway.upstream.stall_timer import StallTimer


@dataclass
class _Timer:
    due: float
    callback: Callable[[], None]
    cancelled: bool = False

    def cancel(self) -> None:
        self.cancelled = True


@dataclass
class _Bench:
    """A clock, a scheduler and a reader that is waiting (or not) when a stall is found."""

    now: float = 0.0
    timers: list[_Timer] = field(default_factory=list)
    stalls: int = 0
    reader_waiting: bool = True

    def clock(self) -> float:
        return self.now

    def schedule(self, delay: float, callback: Callable[[], None]) -> _Timer:
        timer = _Timer(self.now + delay, callback)
        self.timers.append(timer)
        return timer

    def on_stall(self) -> bool:
        if self.reader_waiting:
            self.stalls += 1
        return self.reader_waiting

    def armed(self) -> list[_Timer]:
        return [t for t in self.timers if not t.cancelled]

    def run_until(self, t: float) -> None:
        """Advance the clock to ``t``, firing every armed timer due by then, in order."""
        while True:
            due = [x for x in self.armed() if x.due <= t]
            if not due:
                break
            first = min(due, key=lambda x: x.due)
            first.cancelled = True  # fired: not armed any more
            self.now = max(self.now, first.due)
            first.callback()
        self.now = t


def _timer(bench: _Bench, deadline: float = 100.0) -> StallTimer:
    return StallTimer(bench.clock, deadline, bench.on_stall, bench.schedule)


def test_steady_progress_costs_one_timer_per_budget_period() -> None:
    bench = _Bench()
    timer = _timer(bench)
    timer.start(0.0, 1.0)
    for step in range(1, 100):  # a read every 10 ms for ~1 s
        bench.run_until(step * 0.01)
        timer.progress(bench.now, 1.0)
    bench.run_until(1.5)
    assert bench.stalls == 0
    assert len(bench.timers) == 2  # the first, and one re-arm when it fired at 1.0


@pytest.mark.parametrize(
    ("silence_until", "stalls"),
    [
        (0.99, 0),  # within the budget
        (1.0, 1),  # the budget reached
        (5.0, 1),  # reported once, not again
    ],
)
def test_a_silence_longer_than_the_budget_is_a_stall(silence_until: float, stalls: int) -> None:
    bench = _Bench()
    _timer(bench).start(0.0, 1.0)
    bench.run_until(silence_until)
    assert bench.stalls == stalls


def test_a_busy_reader_gets_a_fresh_silence() -> None:
    bench = _Bench(reader_waiting=False)
    _timer(bench).start(0.0, 1.0)
    bench.run_until(1.0)  # the reader is writing to a slow client: nothing to interrupt
    assert bench.stalls == 0
    bench.reader_waiting = True
    bench.run_until(1.99)
    assert bench.stalls == 0
    bench.run_until(2.0)
    assert bench.stalls == 1


def test_a_shorter_budget_rearms_at_once() -> None:
    bench = _Bench()
    timer = _timer(bench)
    timer.start(0.0, 60.0)  # until the first token
    bench.run_until(0.1)
    timer.progress(0.1, 0.5)  # after it: idle budget
    bench.run_until(0.59)
    assert bench.stalls == 0
    bench.run_until(0.6)
    assert bench.stalls == 1


def test_the_deadline_caps_every_silence() -> None:
    bench = _Bench()
    timer = _timer(bench, deadline=2.5)
    timer.start(0.0, 1.0)
    for t in (0.9, 1.8):
        bench.run_until(t)
        timer.progress(t, 1.0)
    bench.run_until(2.49)
    assert bench.stalls == 0
    bench.run_until(2.5)
    assert bench.stalls == 1


def test_past_the_deadline_a_busy_reader_is_left_to_check_it() -> None:
    bench = _Bench(reader_waiting=False)
    _timer(bench, deadline=1.0).start(0.0, 5.0)
    bench.run_until(1.0)
    assert bench.armed() == []  # stopped: the reader checks the deadline before it reads


def test_cancel_disarms() -> None:
    bench = _Bench()
    timer = _timer(bench)
    timer.start(0.0, 1.0)
    timer.cancel()
    bench.run_until(10.0)
    assert bench.stalls == 0
