"""Discrete-event runner that drives an ``Engine`` on simulated time, without real sleeps.

Algorithm: requests arrive at given simulated times. While the engine has work it steps;
a step starting at ``t`` ends at ``t + duration``, and requests that arrived before the end
join the waiting queue for the next step. An idle engine jumps to the next arrival. For each
request the runner records arrival, first-token and finish times, from which tests derive
waiting times (queueing), TTFT and throughput.

Parameters: the engine, the ``(time, request)`` arrivals, optional abort times.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from loadtests.sim.engine import Engine, EngineRequest, StepResult


@dataclass
class Trace:
    """What happened to one request on the simulated clock."""

    arrival: float
    admitted: float | None = None
    cached_tokens: int = 0
    first_token: float | None = None
    finished: float | None = None
    finish_reason: str | None = None
    tokens: int = 0


class VirtualRunner:
    """Steps an engine on a virtual clock; ``now`` is simulated seconds."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.now = 0.0
        self.traces: dict[str, Trace] = {}
        self.steps: list[StepResult] = []

    def submit(self, req: EngineRequest) -> None:
        self.engine.add_request(req)
        self.traces[req.request_id] = Trace(arrival=self.now)

    def step(self) -> StepResult:
        """One engine step; the clock advances by its duration and outputs are recorded."""
        start = self.now
        result = self.engine.step()
        self.now += result.duration_s
        self.steps.append(result)
        for rid, cached in result.admitted.items():
            self.traces[rid].admitted = start
            self.traces[rid].cached_tokens = cached
        for rid, n in result.emitted.items():
            trace = self.traces[rid]
            if trace.first_token is None:
                trace.first_token = self.now
            trace.tokens += n
        for rid, reason in result.finished.items():
            self.traces[rid].finished = self.now
            self.traces[rid].finish_reason = reason
        return result

    def run_until_idle(self, max_steps: int = 1_000_000) -> None:
        for _ in range(max_steps):
            if not self.engine.has_work():
                return
            self.step()
        raise RuntimeError("engine did not drain")

    def run(self, arrivals: Iterable[tuple[float, EngineRequest]]) -> dict[str, Trace]:
        """Feed time-ordered arrivals and run until every request is done."""
        pending = sorted(arrivals, key=lambda a: a[0])
        i = 0
        while i < len(pending) or self.engine.has_work():
            if not self.engine.has_work() and self.now < pending[i][0]:
                self.now = pending[i][0]
            while i < len(pending) and pending[i][0] <= self.now:
                at, req = pending[i]
                self.engine.add_request(req)
                self.traces[req.request_id] = Trace(arrival=at)
                i += 1
            self.step()
        return self.traces
