"""The words of an admission refusal: what was promised, what was predicted, what is spent.

Algorithm: a refusal is decided on ``spent + predicted TTFT`` against the limit (the pool's TTFT
objective for the request, or its deadline: the client's, else the pool's default), where
``spent`` is the time since the request arrived at the gateway (its queue wait included) and the
prediction counts from now. The message says all three, so the numbers add up for whoever reads
it:

    Pool 'small' cannot serve this request in time: predicted first token at 2.3 s, past the
    2.0 s objective; 0.2 s already spent here.

A refusal for another reason (a full queue, the overload ladder, ``max_wait_s``) names the
reason, the prediction and the objective it would have been held to. Seconds are shown to
0.1 s, or 0.01 s when the prediction and the limit would otherwise read the same.
"""

from __future__ import annotations


def refusal_text(
    pool: str,
    reason: str,
    spent_s: float,
    ttft_s: float,
    objective_s: float | None,
    deadline_s: float | None,
) -> str:
    """``spent_s``: since arrival; ``ttft_s``: predicted from now; ``objective_s`` and
    ``deadline_s``: the request's, from arrival (None: none)."""
    spent = max(0.0, spent_s)
    first = spent + ttft_s
    head = f"Pool '{pool}' cannot serve this request in time"
    tail = f"{spent:.1f} s already spent here."
    if reason == "deadline_unmeetable" and deadline_s is not None:
        at, limit = _pair(first, deadline_s)
        return f"{head}: predicted first token at {at} s, past the {limit} s deadline; {tail}"
    if reason == "objective_unmeetable" and objective_s is not None:
        at, limit = _pair(first, objective_s)
        return f"{head}: predicted first token at {at} s, past the {limit} s objective; {tail}"
    promised = "no objective" if objective_s is None else f"objective {objective_s:.1f} s"
    why = reason.replace("_", " ")
    return f"{head} ({why}): predicted first token at {first:.1f} s ({promised}); {tail}"


def _pair(a: float, b: float) -> tuple[str, str]:
    """Both to 0.1 s, or to 0.01 s when 0.1 s would make them look equal."""
    digits = 1 if f"{a:.1f}" != f"{b:.1f}" else 2
    return f"{a:.{digits}f}", f"{b:.{digits}f}"
