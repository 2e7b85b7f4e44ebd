"""One request's attempts as the dispatch stage runs them: its way through the replicas
(``Run``), how an attempt is sent (``Opener``: ``relay.Proxy``), and what its first-token
race may do (``RaceOptions``, the race's ``Options``: open, hedge, give back) on the
dispatcher's behalf (``Dispatching``)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from gateway.admission.permit import Permit
from gateway.errors import GatewayError
from gateway.path.context import Plan, RequestContext
from gateway.path.exchange.lease import Lease
from gateway.path.exchange.readmission import where_to
from gateway.recovery.hedging import Straggler
from gateway.recovery.take_back import Where
from gateway.retry_budget import RetryBudget
from gateway.scheduling.scheduler import RouteFacts
from gateway.upstream import UpstreamResponse

# A pool's state for hedging: (seconds since it was last saturated, anything waiting).
PoolStateOf = Callable[[str], tuple[float, bool]]


@dataclass(slots=True)
class Run:
    """One request's way through the attempts."""

    ctx: RequestContext
    permit: Permit | None
    facts: RouteFacts
    tried: list[str] = field(default_factory=list)
    last: GatewayError | None = None
    # Every replica of the current pool was tried: retrying there would only spend budget.
    exhausted: bool = False
    taken: int = 0  # times taken back from an engine's queue (``recovery/take_back.py``)


class Opener(Protocol):
    """Sends one attempt's request and waits for the replica's 200 head (``relay.Proxy``)."""

    async def open(self, lease: Lease, body: dict[str, Any] | None = None) -> UpstreamResponse: ...

    async def read_whole(self, lease: Lease, response: UpstreamResponse) -> bytes:
        """A whole answer's body (a cut one raises a retryable error)."""
        ...


class Dispatching(Protocol):
    """What a race asks of the dispatch stage (``dispatch.Dispatcher``)."""

    opener: Opener
    pool_state: PoolStateOf

    def lease(self, run: Run, plan: Plan) -> Lease: ...

    def hedge_budget(self, plan: Plan) -> RetryBudget: ...

    def alternative_s(self, run: Run, plan: Plan, lease: Lease) -> float | None: ...

    def other_replicas(self, run: Run, plan: Plan, lease: Lease) -> bool: ...


class RaceOptions:
    """What one request's first-token race may do (``race.Options``)."""

    def __init__(self, dispatcher: Dispatching, run: Run, plan: Plan) -> None:
        self._dispatcher = dispatcher
        self._run = run
        self._plan = plan
        dispatcher.hedge_budget(plan).on_request()

    async def open(self, lease: Lease) -> UpstreamResponse:
        return await self._dispatcher.opener.open(lease)

    def straggler(self, lease: Lease, elapsed_s: float, hedged: bool) -> Straggler:
        d, run, plan = self._dispatcher, self._run, self._plan
        late = not hedged and lease.supported and elapsed_s >= lease.upper_s
        calm, waits = d.pool_state(plan.pool.name) if late else (math.inf, False)
        alternative = d.alternative_s(run, plan, lease) if late else None
        return Straggler(
            elapsed_s, lease.upper_s, lease.supported, hedged, alternative, calm, waits,
            run.ctx.priority,
        )  # fmt: skip

    def budget_allows(self) -> bool:
        return self._dispatcher.hedge_budget(self._plan).try_spend()

    def hedge(self) -> Lease | None:
        try:
            return self._dispatcher.lease(self._run, self._plan)
        except GatewayError:
            return None

    def asked_back(self, lease: Lease, ahead: int, hedge_out: bool, now: float) -> Where:
        run = self._run
        d = self._dispatcher
        elsewhere = hedge_out or d.alternative_s(run, self._plan, lease) is not None
        alone = not d.other_replicas(run, self._plan, lease)
        where = where_to(lease, ahead, elsewhere, alone, run.taken, now)
        run.taken += where is not Where.STAY
        return where
