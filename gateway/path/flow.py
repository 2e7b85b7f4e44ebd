"""The contract every stage of the request path keeps.

A stage is ``async def stage(flow: Flow, services: Services) -> Flow | Response``:

- in: the request as the stages before it left it (``Flow``: its context, the plan, the
  admission permit, the opened exchange, the response headers decided so far), and the
  running gateway's parts (``Services``, a protocol: each stage uses only those it names);
- out: the request for the next stage (a new ``Flow``, or the same one when the stage
  changed nothing: it is frozen), or the ``Response`` that ends the path (a cache hit, the
  relayed answer);
- a refusal is raised as a ``GatewayError``: its status, body and headers are the decision,
  rendered once by the edge.

Each stage is the one place its decision is made; where that decision is pure it is a plain
function of the stage's module (``plan_pool``, ``rewrite_request``, ``compress_request``,
tested by tables), and the stage is the thin shell that applies it. ``run.py`` holds the
order. Identification (``identify.py``) comes first and makes the flow's context; reporting
(``report.py``) comes last, wherever the request ends.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from starlette.responses import Response

from gateway.admission.controller import PoolAdmission
from gateway.admission.permit import Permit
from gateway.cache.live_cache import CacheHolder
from gateway.cache.store.capture import AnswerCapture
from gateway.metrics import GatewayMetrics
from gateway.openai.disconnect import DisconnectWatch
from gateway.path.context import Plan, RequestContext
from gateway.path.exchange.first_token import Primed
from gateway.path.exchange.lease import Lease
from gateway.path.exchange.splice import Continuer
from gateway.path.report import Reporter
from gateway.rewrite import MemoryPrefixStore
from gateway.rewrite.summaries import SummaryService
from gateway.upstream import UpstreamResponse


@dataclass(frozen=True, slots=True)
class Opened:
    """An exchange a replica accepted (its 200 head came; a stream's first token too): what
    the relay stage answers from."""

    lease: Lease
    response: UpstreamResponse
    degraded: bool  # answered by a fallback pool
    # What was read already: a stream's chunks up to its first token, a whole answer's body.
    primed: Primed


@dataclass(frozen=True, slots=True)
class Flow:
    """One request between two stages."""

    ctx: RequestContext
    headers: dict[str, str]  # the response's x-gateway-* headers, each stage adds its own
    watch: DisconnectWatch
    plan: Plan | None = None  # the plan stage's pool, moved by compression or a degrade
    capture: AnswerCapture | None = None  # a cache miss whose answer is to be stored
    permit: Permit | None = None  # the admission stage's slot
    degraded: bool = False  # moved to a smaller pool by admission
    opened: Opened | None = None  # the dispatch stage's exchange

    def planned(self) -> Plan:
        assert self.plan is not None, "the plan stage runs before this one"
        return self.plan


class Dispatch(Continuer, Protocol):
    """Opens the upstream exchange for a planned, admitted request, and continues a stream
    cut short (``dispatch.Dispatcher``)."""

    async def open(
        self, ctx: RequestContext, plan: Plan, permit: Permit | None = None
    ) -> Opened: ...


class Relay(Protocol):
    """Relays an opened exchange to the client (``relay.Proxy``)."""

    async def respond(
        self,
        lease: Lease,
        response: UpstreamResponse,
        headers: dict[str, str],
        watch: DisconnectWatch,
        capture: AnswerCapture | None,
        primed: Primed,
        resume: Continuer | None = None,
    ) -> Response: ...


class Services(Protocol):
    """What the stages use of the running gateway (``runtime.parts.Gateway`` has it all)."""

    @property
    def clock(self) -> Callable[[], float]: ...

    @property
    def metrics(self) -> GatewayMetrics: ...

    @property
    def prefix_store(self) -> MemoryPrefixStore | None: ...  # rewrite: session prefixes

    @property
    def caches(self) -> CacheHolder: ...  # cache: the response cache, kNN vote, embedder

    def verify_hit(self, ctx: RequestContext) -> Awaitable[dict[str, Any]]:
        """cache: the backend's answer to a sampled hit's request."""
        ...

    @property
    def summaries(self) -> SummaryService | None: ...  # compress

    @property
    def admissions(self) -> Mapping[str, PoolAdmission]: ...  # admit

    def prompt_tokens(self, pool: str, chars: int) -> float:
        """admit: the prompt tokens the pool's backends count for ``chars`` characters."""
        ...

    @property
    def dispatcher(self) -> Dispatch: ...  # dispatch

    @property
    def relay(self) -> Relay: ...  # relay

    @property
    def report(self) -> Reporter: ...  # report


Stage = Callable[[Flow, Services], Awaitable[Flow | Response]]
