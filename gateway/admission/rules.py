"""When admission refuses a request on its prediction: the rules, as one pure function.

``late_reason(request, prediction, times, state, now)`` returns the refusal's reason, or
None to admit; the hard caps (``max_queue`` and ``max_queue_long``: ``queue_cap``;
``max_wait_s``: ``wait_cap``) are checked before it by the controller. In order:

1. a critical request: never (only the hard caps refuse it);
2. a prediction that does not rest on observations (the predictor's prior, a feature
   beyond what it has seen, a slot wait over probed rather than shown limits, or over a
   batch size seen in a single read): never; the request is admitted and the prediction
   learns from it;
3. the predicted first token past the request's deadline (the client's
   ``x-gateway-deadline-ms``, else the pool's default: ``deadline_factor`` times the
   objective): ``deadline_unmeetable`` (waiting longer is useless);
4. the pool saturated (``saturation.py``) and the predicted first token past the objective:
   ``objective_unmeetable`` (a smaller pool may still take it: the admission stage tries a
   degrade first);
5. otherwise admitted: below saturation a request that will be somewhat late is served.

Sheddable requests follow the same rules at their own objective (``objective.priority``);
the overload ladder, when the policy has one, may shed them sooner.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from gateway.admission.decision import AdmissionRequest, Prediction
from gateway.admission.queue import Lane, Priority
from gateway.admission.saturation import PoolState

DEADLINE = "deadline_unmeetable"
OBJECTIVE = "objective_unmeetable"


class QueueCaps(Protocol):
    """The hard caps of a pool's queue (its ``admission`` settings)."""

    @property
    def max_queue(self) -> int: ...
    @property
    def max_queue_long(self) -> int: ...


@dataclass(frozen=True, slots=True)
class Times:
    """A request's time limits on the admission clock."""

    arrival: float
    objective_s: float | None  # from arrival (None: no objective, or a critical request)
    deadline: float | None  # absolute: the client's, else the pool's default (None: none)

    @property
    def objective_at(self) -> float | None:
        return None if self.objective_s is None else self.arrival + self.objective_s


def deadline_of(
    request: AdmissionRequest, objective_s: float | None, deadline_factor: float, now: float
) -> Times:
    """The request's limits: its own deadline, or ``deadline_factor`` times its objective."""
    arrival = request.arrival if request.arrival is not None else now
    default = None if objective_s is None else arrival + deadline_factor * objective_s
    own = request.deadline
    deadline = default if own is None else own if default is None else min(own, default)
    return Times(arrival, objective_s, deadline)


def queue_cap(settings: QueueCaps, lane: Lane, queued: int, long_depth: int) -> str | None:
    """``queue_full`` with ``max_queue`` waiting (the host's), ``long_queue_full`` for a long
    prompt with ``max_queue_long`` in the long lane; checked only when no slot is free."""
    if queued >= settings.max_queue:
        return "queue_full"
    if lane is Lane.LONG and long_depth >= settings.max_queue_long:
        return "long_queue_full"
    return None


def wait_cap(max_wait_s: float | None, request: AdmissionRequest, wait_s: float) -> str | None:
    """``wait_too_long`` when a request that is not critical would wait past ``max_wait_s``."""
    critical = request.priority is Priority.CRITICAL
    if max_wait_s is not None and wait_s > max_wait_s and not critical:
        return "wait_too_long"
    return None


def late_reason(
    request: AdmissionRequest,
    prediction: Prediction,
    times: Times,
    state: PoolState,
    now: float,
) -> str | None:
    """Why the request is refused on its prediction (``DEADLINE``, ``OBJECTIVE``), or None."""
    if request.priority is Priority.CRITICAL or not prediction.supported:
        return None
    first_token = now + prediction.ttft_s
    if times.deadline is not None and first_token > times.deadline:
        return DEADLINE
    objective_at = times.objective_at
    if state.saturated and objective_at is not None and first_token > objective_at:
        return OBJECTIVE
    return None


def give_up_at(times: Times, backend_s: float, saturated: bool) -> float | None:
    """The latest dispatch from the gateway's queue that still helps: before the deadline
    always, and before the objective while the pool is saturated (its first token comes
    ``backend_s`` after dispatch)."""
    limits = [] if times.deadline is None else [times.deadline]
    objective_at = times.objective_at
    if saturated and objective_at is not None:
        limits.append(objective_at)
    return None if not limits else min(limits) - backend_s
