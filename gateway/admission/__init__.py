"""Admission control algorithms of a pool: pure, synchronous, clock-injected.

``limits`` (how many in flight), ``queue`` (who waits, who goes next), ``drain`` (how fast
work leaves), ``ladder`` (how overloaded, and what that means for a request), ``retry_after``
(what to tell a shed client). The enforcement (asyncio, HTTP) lives elsewhere.
"""

from gateway.admission.drain import DrainRate
from gateway.admission.ladder import Action, Ladder, Signals, Step, verdict
from gateway.admission.limits import (
    AimdLimit,
    AimdSettings,
    GradientLimit,
    GradientSettings,
    LimitAlgorithm,
    StaticLimit,
)
from gateway.admission.queue import AdmissionQueue, Lane, Priority, Ticket
from gateway.admission.retry_after import retry_after_header, retry_after_s

__all__ = [
    "Action",
    "AdmissionQueue",
    "AimdLimit",
    "AimdSettings",
    "DrainRate",
    "GradientLimit",
    "GradientSettings",
    "Ladder",
    "Lane",
    "LimitAlgorithm",
    "Priority",
    "Signals",
    "StaticLimit",
    "Step",
    "Ticket",
    "retry_after_header",
    "retry_after_s",
    "verdict",
]
