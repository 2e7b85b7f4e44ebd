"""The ramp rows' plans: closed-loop users at rising concurrency onto one engine (pure).

A ``Ramp`` is one engine (its fleet file), a request shape and levels of ``concurrency:
requests`` run back to back on one target without restarting it (the point is the ramp: what
the target learned at one level it keeps at the next). Each level's requests are drawn from
one synthetic chat class (``request_workload``): prompts of about ``prompt_tokens`` filler
tokens (lognormal, sigma 0.3) and exactly ``output_tokens`` tokens (``ignore_eos``), every
request standard priority and of the same model.

- ``ramp``: ``loadtests/sim/fleets/ramp.yaml`` (256 slots, fast), 100-token prompts, 4
  output tokens; levels ``4:200,64:512,200:1000`` (the issue's); target: no refusal and
  TTFT p99 within ``RAMP_P99_FACTOR`` (2) x direct's at every level.
- ``ramp8``: ``loadtests/sim/fleets/ramp8.yaml`` (8 slots, the CPU profile), 200-token
  prompts, 48 output tokens; levels ``4:40,16:160,64:384``; target: refusals only once the
  engine reports requests waiting or the TTFTs rise (``loadtests.slo.ramp_rows``).

Parameters: ``levels`` (text ``c:n,c:n``), ``seed``, ``model`` (the name every request asks
for).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from loadtests.loadgen.plan import synthesise
from loadtests.loadgen.request import PlannedRequest
from loadtests.loadgen.workload import Workload

FLEETS = Path(__file__).resolve().parents[1] / "sim" / "fleets"
RAMP_P99_FACTOR = 2.0


@dataclass(frozen=True, slots=True)
class Shape:
    """One ramp's engine and requests."""

    name: str  # the scenario: ramp, ramp8
    title: str
    fleet: Path
    prompt_tokens: int
    output_tokens: int


FAST = Shape("ramp", "Ramp onto an engine with room (256 slots, fast)", FLEETS / "ramp.yaml",
             100, 4)  # fmt: skip
SLOTS8 = Shape("ramp8", "Ramp onto an engine with 8 slots", FLEETS / "ramp8.yaml", 200, 48)
SHAPES = {s.name: s for s in (FAST, SLOTS8)}


@dataclass(frozen=True, slots=True)
class Level:
    concurrency: int
    plan: tuple[PlannedRequest, ...]

    @property
    def load(self) -> str:
        return f"c={self.concurrency}"


@dataclass(frozen=True, slots=True)
class Ramp:
    shape: Shape
    levels: tuple[Level, ...]

    def requests(self) -> int:
        return sum(len(level.plan) for level in self.levels)


def parse_levels(text: str) -> list[tuple[int, int]]:
    """``"4:200,64:512"`` -> ``[(4, 200), (64, 512)]`` (users, requests)."""
    levels = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        users, sep, count = part.partition(":")
        if not sep or not users.isdigit() or not count.isdigit():
            raise ValueError(f"a ramp level is users:requests, not {part!r}")
        if int(users) < 1 or int(count) < 1:
            raise ValueError(f"a ramp level needs users and requests: {part!r}")
        levels.append((int(users), int(count)))
    if not levels:
        raise ValueError("a ramp needs at least one level")
    return levels


def request_workload(shape: Shape, model: str) -> Workload:
    """The ramp's one request class (``at_s`` unused: the users are closed-loop)."""
    return Workload.model_validate({
        "name": shape.name, "model": model, "temperature": 0.0,
        "arrival": {"kind": "poisson", "rate": 1.0},
        "classes": [{
            "name": "chat", "kind": "synthetic",
            "prompt_tokens": {"kind": "lognormal", "median": shape.prompt_tokens, "sigma": 0.3,
                              "min": max(1, shape.prompt_tokens // 4),
                              "max": shape.prompt_tokens * 4},
            "output_tokens": {"kind": "fixed", "value": shape.output_tokens},
        }],
    })  # fmt: skip


def ramp(shape: Shape, levels: str, seed: int, model: str) -> Ramp:
    """The ramp's levels; request indices run on across levels (one time line)."""
    counts = parse_levels(levels)
    total = sum(n for _, n in counts)
    every = synthesise(request_workload(shape, model), seed, [0.0] * total)
    every = [dataclasses.replace(r, extra={"ignore_eos": True}) for r in every]
    out, start = [], 0
    for users, n in counts:
        out.append(Level(users, tuple(every[start : start + n])))
        start += n
    return Ramp(shape, tuple(out))
