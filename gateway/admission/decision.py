"""What admission decides, as values: the request it is asked about, the predicted time to
first token, and the decision (admit, degrade or refuse with a reason)."""

from __future__ import annotations

from dataclasses import dataclass

from gateway.admission.queue import Lane, Priority


@dataclass(frozen=True, slots=True)
class AdmissionRequest:
    priority: Priority
    lane: Lane
    cost: float  # estimated work: prompt plus output tokens
    deadline: float | None  # absolute, on the admission clock
    degradable: bool  # the gateway chose the pool (model: auto), so it may choose another
    prompt_tokens: float = 0.0  # what prefill pacing and the TTFT prediction count
    arrival: float | None = None  # when the client sent it (the objective counts from here)


# A standard short request with no work of its own: what "the pool's wait now" means.
PROBE = AdmissionRequest(Priority.STANDARD, Lane.SHORT, 0.0, None, degradable=False)


@dataclass(frozen=True, slots=True)
class Prediction:
    wait_s: float  # for a slot in the gateway's queue
    backend_s: float  # from dispatch to first token, on the best replica now
    # Both parts rest on observations (not a prior, not beyond what was seen): only such a
    # prediction may refuse a request (``rules.py``).
    supported: bool = True
    # The replica's part alone does: only then may it bring a waiter's give-up time forward.
    backend_supported: bool = True

    @property
    def ttft_s(self) -> float:
        return self.wait_s + self.backend_s


@dataclass(frozen=True, slots=True)
class Decision:
    prediction: Prediction
    objective_s: float | None = None
    refuse: str | None = None  # the reason, when refused
    degrade_to: str | None = None  # the ladder's degrade step
    deadline: float | None = None  # absolute: the client's, else the pool's default
    saturated: bool = False  # the pool's state when it was decided

    @property
    def unmeetable(self) -> bool:
        """Refused only because the objective cannot be met (another pool might)."""
        return self.refuse == "objective_unmeetable"
