"""One request through the path, stage by stage, in the order they run.

``edge/routes.py`` reads and parses the request and calls ``identify.identified`` (who, how
big, which model, how often, what priority); then ``serve`` runs the rest, each stage under
the contract of ``flow.py``:

    rewrite -> cache -> plan -> compress -> admit -> dispatch -> relay

and ``report`` records every request once, however it ends: in the lease of a served one
(``exchange/lease.py``), in the cache stage for a hit, and in the edge for a refusal. Each
stage's module is the one place its decision is made; ``x-gateway-*`` response headers and
the metrics say what each decided (docs/concepts/request-path.md maps them).
"""

from __future__ import annotations

from starlette.responses import Response

from gateway.openai.disconnect import DisconnectWatch
from gateway.path.admit import admit_stage
from gateway.path.cache import cache_stage
from gateway.path.compress import compress_stage
from gateway.path.context import RequestContext
from gateway.path.dispatch import dispatch_stage
from gateway.path.flow import Flow, Services, Stage
from gateway.path.plan import plan_stage
from gateway.path.relay import relay_stage
from gateway.path.rewrite import rewrite_stage

# (the mark a trace shows when the stage ends, the stage); the last one answers.
STAGES: tuple[tuple[str, Stage], ...] = (
    ("rewrite", rewrite_stage),
    ("cache", cache_stage),
    ("plan", plan_stage),
    ("compress", compress_stage),
    ("admit", admit_stage),
    ("upstream_open", dispatch_stage),  # until the replica's response head
    ("relay", relay_stage),
)


async def serve(
    services: Services, ctx: RequestContext, headers: dict[str, str], watch: DisconnectWatch
) -> Response:
    """The stages after identification; raises ``GatewayError`` for a refusal."""
    flow = Flow(ctx, headers, watch)
    marks, clock = ctx.marks, services.clock
    for mark, stage in STAGES:
        out = await stage(flow, services)
        if isinstance(out, Response):
            return out
        flow = out
        marks.mark(mark, clock())
    raise AssertionError("the relay stage answers every request it is given")
