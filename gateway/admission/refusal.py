"""A refusal as the client gets it: a 503 with an honest ``Retry-After``, a message that
names what it was decided on, and headers that say the same in numbers.

The message (``refusal_text.py``) names the prediction, the limit it missed (the objective or
the deadline) and the time the request had already spent (``predicted first token at 2.3 s, past
the 2.0 s objective; 0.2 s already spent here``): a prediction alone would read as a
contradiction when it is below the objective of a request that has waited. ``Retry-After`` is
the predicted time until the work ahead has drained (``retry_after.py``).

Causes, for the metrics and the dashboard: ``deadline`` (past the request's deadline),
``saturated`` (the pool saturated and the objective missed, or the overload ladder's shed
step), ``hard_cap`` (the queue caps and ``max_wait_s``).
"""

from __future__ import annotations

from dataclasses import dataclass

from gateway.admission.decision import Prediction
from gateway.admission.refusal_text import refusal_text
from gateway.admission.retry_after import retry_after_s
from gateway.admission.rules import DEADLINE
from gateway.errors import GatewayError, ServiceUnavailable
from gateway.metrics import GatewayMetrics

HARD_CAPS = frozenset({"queue_full", "long_queue_full", "wait_too_long"})


def cause_of(reason: str) -> str:
    """The refusal's cause (``deadline``, ``saturated``, ``hard_cap``) for its reason code."""
    if reason == DEADLINE:
        return "deadline"
    if reason in HARD_CAPS:
        return "hard_cap"
    return "saturated"  # objective_unmeetable, overload_step_N


@dataclass(frozen=True, slots=True)
class Refused:
    """What a refusal was decided on."""

    pool: str
    reason: str
    priority: str
    prediction: Prediction
    spent_s: float  # since the request arrived (its wait in the queue included)
    queued_s: float  # in the gateway's queue (0: refused at arrival)
    objective_s: float | None
    deadline_s: float | None  # from arrival


def refusal_error(refused: Refused, metrics: GatewayMetrics) -> GatewayError:
    """The 503 for ``refused``, counted (``gateway_shed_total``, the Retry-After advised)."""
    ttft_s = refused.prediction.ttft_s
    retry = retry_after_s(ttft_s)
    pool, reason = refused.pool, refused.reason
    metrics.shed.labels(pool, reason, refused.priority, cause_of(reason)).inc()
    metrics.retry_after.labels(pool).observe(retry)
    return ServiceUnavailable(
        refusal_text(
            pool,
            reason,
            refused.spent_s,
            ttft_s,
            refused.objective_s,
            refused.deadline_s,
        ),
        code=refused.reason,
        retry_after_s=retry,
        headers={
            # What the refusal was decided on: the wait for a slot, then the replica.
            "x-gateway-predicted-wait-ms": f"{refused.prediction.wait_s * 1000:.0f}",
            "x-gateway-predicted-ttft-ms": f"{ttft_s * 1000:.0f}",
            # 0: refused at arrival; else how long it waited for a slot first.
            "x-gateway-queue-ms": f"{refused.queued_s * 1000:.0f}",
        },
    )
