"""The upstream as the trials see it (``Target``), and the fake upstream's (``FakeTarget``).

A target makes each phase's request body, says when a request is in the phase to measure and
when the upstream saw the client leave (bounded), and settles after each trial. The fake
records the ``time.monotonic()`` of every cancellation it notices (``FakeLog.left_times``);
a first_token trial makes it wait ``first_token_s`` for the first token, and a missed trial
waits ``settle_s`` for a late cancel. Every prompt starts with a unique nonce.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from loadtests.cancellation.trial import ARRIVE_TIMEOUT_S, SETTLE_S, Body, Trial
from loadtests.kit.fake_upstream import FakeLog
from loadtests.kit.serving import Served

FAKE_HOLD = {"ttft_s": 0.001, "tokens": 1_000_000, "itl_s": 0.5}  # ~5.8 days of stream


class Target:
    """One upstream as the trials see it."""

    name: str
    url: str
    model: str

    def body(self, phase: str) -> Body:
        raise NotImplementedError

    def warm_up_bodies(self) -> list[Body]:
        raise NotImplementedError

    def start_trial(self, phase: str) -> None:
        raise NotImplementedError

    def wait_in_phase(self, phase: str) -> None:
        """Block until the request is where ``phase`` wants it (not for ``streaming``)."""
        raise NotImplementedError

    def wait_seen(self, phase: str, bound_s: float) -> Trial:
        """Block until the upstream saw the client leave (at most ``bound_s``)."""
        raise NotImplementedError

    def settle(self, trial: Trial) -> None:
        """After the trial: make sure nothing of it is left before the next one."""
        raise NotImplementedError

    # the queued phase

    def holder_body(self) -> Body:
        """The long request that holds the pool's only slot."""
        raise NotImplementedError

    def start_holder(self) -> None:
        """Called just before a holder is sent."""
        raise NotImplementedError

    def holder_left_s(self) -> float:
        """At least how many seconds the current holder still runs."""
        raise NotImplementedError

    def received(self) -> tuple[int, ...]:
        """The upstream's own counts of the generation requests it has received so far."""
        raise NotImplementedError


def nonce() -> str:
    return f"[{uuid.uuid4().hex}]"


def chat_body(content: str, stream: bool, **extra: Any) -> Body:
    return {
        "model": "bench",
        "messages": [{"role": "user", "content": content}],
        "stream": stream,
        **extra,
    }


class FakeTarget(Target):
    """``first_token_s``: how long the fake makes a first_token trial wait for its token;
    ``settle_s``: how long a missed trial waits for a late cancel (a peer that notices only
    when the first token comes notices ``first_token_s`` late)."""

    def __init__(
        self,
        served: Served,
        log: FakeLog,
        model: str,
        first_token_s: float = 30.0,
        settle_s: float = SETTLE_S,
    ) -> None:
        self.name = "fake"
        self.url = served.url
        self.model = model
        self.log = log
        self.first_token_s = first_token_s
        self.settle_s = settle_s
        self._before = 0
        self._holder_ends = 0.0

    def body(self, phase: str) -> Body:
        prompt = nonce() + " Say something."
        if phase == "queued":
            return chat_body(prompt, True, fake={"ttft_s": 0.001, "tokens": 5, "itl_s": 0.001})
        if phase == "first_token":
            return chat_body(prompt, True, fake={"ttft_s": self.first_token_s})
        if phase == "streaming":
            return chat_body(prompt, True, fake={"tokens": 1000, "itl_s": 0.02})
        return chat_body(prompt, False, fake={"ttft_s": self.first_token_s})

    def warm_up_bodies(self) -> list[Body]:
        fast = {"ttft_s": 0.001, "tokens": 5, "itl_s": 0.001}
        return [chat_body("hello", s, fake=fast) for s in (True, False) for _ in range(5)]

    def start_trial(self, phase: str) -> None:
        self.log.arrived.clear()
        self.log.left.clear()
        self._before = len(self.log.left_times)

    def wait_in_phase(self, phase: str) -> None:
        if not self.log.arrived.wait(ARRIVE_TIMEOUT_S):
            raise RuntimeError("the request never reached the fake upstream")

    def _cancel_time(self, deadline: float) -> float | None:
        while len(self.log.left_times) <= self._before:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            self.log.left.wait(remaining)
            self.log.left.clear()
        return self.log.left_times[self._before]

    def wait_seen(self, phase: str, bound_s: float) -> Trial:
        seen = self._cancel_time(time.monotonic() + bound_s)
        return Trial(seen)

    def settle(self, trial: Trial) -> None:
        if trial.delay_s is None:
            # A late cancel must not be taken for the next trial's.
            self._cancel_time(time.monotonic() + self.settle_s)

    def holder_body(self) -> Body:
        return chat_body(nonce() + " Hold the slot.", True, fake=FAKE_HOLD)

    def start_holder(self) -> None:
        self._holder_ends = time.monotonic() + FAKE_HOLD["ttft_s"]
        self._holder_ends += FAKE_HOLD["tokens"] * FAKE_HOLD["itl_s"]

    def holder_left_s(self) -> float:
        return self._holder_ends - time.monotonic()

    def received(self) -> tuple[int, ...]:
        return (len(self.log.bodies),)
