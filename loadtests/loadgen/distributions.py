"""Length distributions for prompts and outputs, sampled with an injected RNG.

Algorithms and parameters:

- ``fixed``: always ``value``.
- ``lognormal``: ``exp(N(ln(median), sigma))`` rounded, then clipped to ``[min, max]``; a
  ShareGPT-like heavy right tail whose median is ``median``.
- ``uniform``: an integer drawn uniformly from ``[min, max]``.
- ``empirical``: one of ``values`` chosen uniformly (optionally weighted by ``weights``).
"""

from __future__ import annotations

import math
import random
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Dist(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Fixed(_Dist):
    kind: Literal["fixed"] = "fixed"
    value: int = Field(ge=1)

    def sample(self, rng: random.Random) -> int:
        return self.value


class LogNormal(_Dist):
    kind: Literal["lognormal"] = "lognormal"
    median: float = Field(gt=0)
    sigma: float = Field(ge=0)
    min: int = Field(default=1, ge=1)
    max: int = Field(default=8192, ge=1)

    @model_validator(mode="after")
    def _bounds(self) -> LogNormal:
        if self.min > self.max:
            raise ValueError("min must be <= max")
        return self

    def sample(self, rng: random.Random) -> int:
        value = round(rng.lognormvariate(math.log(self.median), self.sigma))
        return max(self.min, min(self.max, value))


class Uniform(_Dist):
    kind: Literal["uniform"] = "uniform"
    min: int = Field(ge=1)
    max: int = Field(ge=1)

    @model_validator(mode="after")
    def _bounds(self) -> Uniform:
        if self.min > self.max:
            raise ValueError("min must be <= max")
        return self

    def sample(self, rng: random.Random) -> int:
        return rng.randint(self.min, self.max)


class Empirical(_Dist):
    kind: Literal["empirical"] = "empirical"
    values: list[Annotated[int, Field(ge=1)]] = Field(min_length=1)
    weights: list[Annotated[float, Field(ge=0)]] | None = None

    @model_validator(mode="after")
    def _weights(self) -> Empirical:
        if self.weights is not None and len(self.weights) != len(self.values):
            raise ValueError("weights must have one entry per value")
        return self

    def sample(self, rng: random.Random) -> int:
        if self.weights is None:
            return rng.choice(self.values)
        return rng.choices(self.values, weights=self.weights, k=1)[0]


LengthDist = Annotated[Fixed | LogNormal | Uniform | Empirical, Field(discriminator="kind")]
