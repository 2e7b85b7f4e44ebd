"""The TTFT objective every row is judged by, per request.

It mirrors the gateway's default objective (issue 18): 2 s for short and medium prompts, and
for long ones 1 s more per 1,000 prompt tokens beyond 2,000. Prompt tokens are the simulated
engine's own count of the rendered chat prompt (``loadtests.slo.capacity.engine_tokens``), the
count the engine reports in ``usage``; so every target is judged on the same number. A
request's deadline, as the gateway's default sets it without ``x-gateway-deadline-ms``, is
``DEADLINE_FACTOR`` (3) times its objective.
"""

from __future__ import annotations

BASE_OBJECTIVE_S = 2.0
LONG_PROMPT_TOKENS = 2000
EXTRA_S_PER_1000_TOKENS = 1.0
DEADLINE_FACTOR = 3.0


def ttft_objective_s(prompt_tokens: int) -> float:
    """Seconds to the first token a request of ``prompt_tokens`` may take.

    Mirrors the gateway's DEFAULT objective (a policy with backends and models only):
    2.0 s + 1.0 s per 1,000 prompt tokens beyond 2,000. Keep the two in step.
    """
    beyond = max(0, prompt_tokens - LONG_PROMPT_TOKENS)
    return BASE_OBJECTIVE_S + EXTRA_S_PER_1000_TOKENS * beyond / 1000


def ttft_deadline_s(prompt_tokens: int) -> float:
    """The gateway's default deadline: ``DEADLINE_FACTOR`` x the objective."""
    return DEADLINE_FACTOR * ttft_objective_s(prompt_tokens)
