"""The calibration workload replayed on the simulator's engine in virtual time.

Algorithm: a discrete-event copy of ``workload.py`` over one ``Engine``. A request sent at
``t`` passes the front end (one request at a time, ``Profile.frontend_s`` each, as the
simulator's HTTP server serialises it) and joins the engine's queue at the next step start;
the engine steps back to back while it has work, the clock advancing by each step's
duration. Per cell: one unmeasured warm-up request alone, then ``concurrency`` workers that
each send ``rounds`` requests of ``max_tokens`` tokens, the next one as soon as the last
ends; the list of cells ``passes`` times, samples pooled per cell. TTFT = first token -
send, TPOT = (last token - first token) / (tokens - 1), as the workload measures them.
Cells without prefix hits get token ids no other request shares; the hit cell repeats one
prompt.

Parameters: a ``Profile``, the ``Plan`` (lengths, concurrencies, rounds, max_tokens) and the
prompt tokens of each cell (the real server's counts, so both sides prefill the same work).
It is deterministic (the engine's seeded step-time noise included) and takes milliseconds
per cell, which is what lets ``fit.py`` search.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from loadtests.calibration.workload import Cell, Plan, Sample, cells
from loadtests.sim.engine import Engine, EngineRequest
from loadtests.sim.profile import Profile


@dataclass(slots=True)
class _Flight:
    worker: int
    sent: float
    prompt_tokens: int
    first: float | None = None


class Replay:
    """One engine on a virtual clock, driven by closed-loop workers."""

    def __init__(self, profile: Profile) -> None:
        self.profile = profile
        self.engine = Engine(profile)
        self.now = 0.0
        self._frontend_free = 0.0
        self._ids = itertools.count()
        self._arrivals: list[tuple[float, EngineRequest]] = []
        self._flights: dict[str, _Flight] = {}

    def run(self, prompts: list[Iterator[list[int]]], max_tokens: int) -> list[Sample]:
        """Each iterator is one worker's prompts, sent one after the other; their samples."""
        samples: list[Sample] = []
        for worker, source in enumerate(prompts):
            self._send(worker, source, max_tokens)
        while self._arrivals or self.engine.has_work():
            self._admit_arrivals()
            result = self.engine.step()
            self.now += result.duration_s
            for rid in result.emitted:
                flight = self._flights[rid]
                flight.first = self.now if flight.first is None else flight.first
            for rid in result.finished:
                flight = self._flights.pop(rid)
                samples.append(self._sample(flight, max_tokens))
                self._send(flight.worker, prompts[flight.worker], max_tokens)
        return samples

    def _send(self, worker: int, source: Iterator[list[int]], max_tokens: int) -> None:
        tokens = next(source, None)
        if tokens is None:
            return
        self._frontend_free = max(self.now, self._frontend_free) + self.profile.frontend_s
        rid = f"r{next(self._ids)}"
        self._arrivals.append((self._frontend_free, EngineRequest(rid, tokens, max_tokens)))
        self._flights[rid] = _Flight(worker, self.now, len(tokens))

    def _admit_arrivals(self) -> None:
        if not self.engine.has_work():
            self.now = max(self.now, min(at for at, _ in self._arrivals))
        due = [a for a in self._arrivals if a[0] <= self.now]
        self._arrivals = [a for a in self._arrivals if a[0] > self.now]
        for _, req in due:
            self.engine.add_request(req)

    def _sample(self, flight: _Flight, max_tokens: int) -> Sample:
        first = flight.first if flight.first is not None else self.now
        tpot = (self.now - first) / (max_tokens - 1) if max_tokens > 1 else 0.0
        return Sample(first - flight.sent, tpot, flight.prompt_tokens)


def replay(profile: Profile, plan: Plan, prompt_tokens: Mapping[str, int]) -> list[dict[str, Any]]:
    """The workload's cell summaries on ``profile``, in the order of ``workload.cells``."""
    sim = Replay(profile)
    unique = itertools.count(1_000_000)
    grid = cells(plan)
    for _ in range(plan.passes):
        for cell in grid:
            n = prompt_tokens[cell.name]

            def prompt(cell: Cell = cell, n: int = n) -> list[int]:
                shared = list(range(1, n + 1))
                return shared if cell.prefix_hit else [next(unique), *shared[1:]]

            sim.run([iter([prompt()])], plan.max_tokens)  # warm-up / cache fill
            rounds = plan.rounds
            workers = [iter([prompt() for _ in range(rounds)]) for _ in range(cell.concurrency)]
            cell.samples.extend(sim.run(workers, plan.max_tokens))
    return [cell.summary() for cell in grid]
