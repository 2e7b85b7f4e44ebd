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
- ``shift``: ``loadtests/sim/fleets/shift.yaml`` (64 slots, the CPU profile), 4 output tokens;
  levels ``16:40@6000,64:512``: 16 users sending 6,000-token prompts, whose prefills hold
  the engine to 2 running with 14 waiting (its token budget, not its slots, is the limit),
  then 64 users sending 100-token prompts, which it runs ~44 at once; target: no refusal and
  TTFT p99 within ``RAMP_P99_FACTOR`` x direct's once the prompts turn short (a batch size
  learned from long prompts must not cap short ones).

Parameters: ``levels`` (text ``c:n,c:n``; ``c:n@t``: that level's prompts are of about ``t``
tokens instead of the shape's), ``seed``, ``model`` (the name every request asks for).
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
SHIFT = Shape("shift", "Prompts turn short on an engine whose long prefills held it to 2",
              FLEETS / "shift.yaml", 100, 4)  # fmt: skip
SHAPES = {s.name: s for s in (FAST, SLOTS8, SHIFT)}


@dataclass(frozen=True, slots=True)
class Level:
    concurrency: int
    plan: tuple[PlannedRequest, ...]
    prompt_tokens: int | None = None  # None: the shape's

    @property
    def load(self) -> str:
        tokens = "" if self.prompt_tokens is None else f", {self.prompt_tokens}-token prompts"
        return f"c={self.concurrency}{tokens}"


@dataclass(frozen=True, slots=True)
class Ramp:
    shape: Shape
    levels: tuple[Level, ...]

    def requests(self) -> int:
        return sum(len(level.plan) for level in self.levels)


def parse_levels(text: str) -> list[tuple[int, int, int | None]]:
    """``"4:200,64:512@6000"`` -> ``[(4, 200, None), (64, 512, 6000)]`` (users, requests,
    prompt tokens or None for the shape's)."""
    levels: list[tuple[int, int, int | None]] = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        users, sep, rest = part.partition(":")
        count, at, tokens = rest.partition("@")
        numbers = [users, count, *([tokens] if at else [])]
        if not sep or not all(n.isdigit() for n in numbers):
            raise ValueError(f"a ramp level is users:requests[@tokens], not {part!r}")
        if min(int(n) for n in numbers) < 1:
            raise ValueError(f"a ramp level needs users, requests and tokens: {part!r}")
        levels.append((int(users), int(count), int(tokens) if at else None))
    if not levels:
        raise ValueError("a ramp needs at least one level")
    return levels


def request_workload(shape: Shape, model: str, prompt_tokens: int | None = None) -> Workload:
    """A level's one request class (``at_s`` unused: the users are closed-loop); prompts of
    about ``prompt_tokens`` (default: the shape's)."""
    median = shape.prompt_tokens if prompt_tokens is None else prompt_tokens
    return Workload.model_validate({
        "name": shape.name, "model": model, "temperature": 0.0,
        "arrival": {"kind": "poisson", "rate": 1.0},
        "classes": [{
            "name": "chat", "kind": "synthetic",
            "prompt_tokens": {"kind": "lognormal", "median": median, "sigma": 0.3,
                              "min": max(1, median // 4), "max": median * 4},
            "output_tokens": {"kind": "fixed", "value": shape.output_tokens},
        }],
    })  # fmt: skip


def ramp(shape: Shape, levels: str, seed: int, model: str) -> Ramp:
    """The ramp's levels; request indices run on across levels (one time line). Levels of
    the shape's prompts take their slice of one draw (as when no level names its own);
    a level of other prompts is drawn apart, its indices moved onto the time line."""
    counts = parse_levels(levels)
    total = sum(n for _, n, _ in counts)
    every = synthesise(request_workload(shape, model), seed, [0.0] * total)
    out, start = [], 0
    for users, n, tokens in counts:
        if tokens is None:
            drawn = every[start : start + n]
        else:
            other = synthesise(request_workload(shape, model, tokens), seed + start, [0.0] * n)
            drawn = [dataclasses.replace(r, index=start + r.index) for r in other]
        plan = tuple(dataclasses.replace(r, extra={"ignore_eos": True}) for r in drawn)
        out.append(Level(users, plan, tokens))
        start += n
    return Ramp(shape, tuple(out))
