"""The prompt sizes asked of a pool lately (one record its replicas share, kept by
``BackendRegistry``): whether the prompts asked now are far shorter than those a replica's
batch size was read full with (``BackendState.batch_holds``).

An engine fed long prompts can run few requests at once for its token budget's sake (each
step's budget goes to the running prefills), not its slots: a batch read full then is no
limit for short prompts. Telling a switch of prompts from a mix of short and long ones:

Algorithm: two exponentially weighted moving averages of ``log(1 + prompt tokens)``, a fast
one (``FAST``: the last few requests) and a slow one (``SLOW``: the last hundred or so), both
starting at the first request's; ``recent`` and ``usual`` are their geometric means in
tokens. Logs, not tokens: a mix of prompts around 200 tokens with a fifth of 2,000 (the SLO
benchmark's bursty mix) keeps ``recent`` above a fifth of ``usual`` at each of 20,000 drawn
requests, while a switch from 6,000-token prompts to 100-token ones takes it under a fifth
at the second short request (``tests/unit/backends/test_asked.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

FAST = 0.3  # weight of one request in the recent average
SLOW = 0.02  # ... and in the usual one


@dataclass
class AskedSizes:
    fast: float = math.nan  # log(1 + tokens) averages; NaN until the first request
    slow: float = math.nan

    def add(self, prompt_tokens: float) -> None:
        x = math.log1p(max(0.0, prompt_tokens))
        if math.isnan(self.fast):
            self.fast = self.slow = x
            return
        self.fast += FAST * (x - self.fast)
        self.slow += SLOW * (x - self.slow)

    @property
    def recent(self) -> float:
        """The recent prompts' typical size, tokens (0 before any request)."""
        return 0.0 if math.isnan(self.fast) else math.expm1(self.fast)

    @property
    def usual(self) -> float:
        """The usual prompts' typical size, tokens (0 before any request)."""
        return 0.0 if math.isnan(self.slow) else math.expm1(self.slow)
