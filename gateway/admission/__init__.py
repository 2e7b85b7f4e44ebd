"""Admission control algorithms of a pool: pure, synchronous, clock-injected.

``objective`` (the TTFT a request is promised), ``hold`` (how long a queued request waits for
a slot), ``limits`` (how many in flight), ``queue`` (who waits, who goes next), ``ladder`` (how
overloaded, and what that means for a request), ``retry_after`` (what to tell a refused
client). The enforcement (asyncio) is ``controller.py`` with ``lease_pump.py`` and
``permit.py``; the replicas' TTFT predictor is ``backends/ttft.py``.
"""

from gateway.admission.hold import HoldTimes
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
    "GradientLimit",
    "GradientSettings",
    "HoldTimes",
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
