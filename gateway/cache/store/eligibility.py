"""Which requests may be answered from the cache, and which answers may be stored.

Only deterministic requests: ``temperature`` 0 (a missing temperature defaults to 1 in the
OpenAI API, so it does not count), unless the policy's ``any_temperature`` override says
the operator accepts replaying sampled answers; one choice (``n`` 1); no log-probabilities
(they belong to the exact prompt). An answer is stored only when every choice finished with
``stop`` and carries no tool call: a truncated answer (``length``) or a tool call depends on
more than the question.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def cacheable_request(body: Mapping[str, Any], *, any_temperature: bool) -> str | None:
    """None when the request may use the cache, else the reason it may not."""
    temperature = body.get("temperature")
    if not any_temperature and (temperature is None or temperature != 0):
        return "nondeterministic"
    if body.get("n") not in (None, 1):
        return "n"
    if body.get("logprobs") or body.get("top_logprobs"):
        return "logprobs"
    return None


def storable_answer(answer: Mapping[str, Any]) -> bool:
    choices = answer.get("choices")
    if not isinstance(choices, list) or len(choices) != 1:
        return False
    choice = choices[0]
    if not isinstance(choice, dict) or choice.get("finish_reason") != "stop":
        return False
    message = choice.get("message")
    if isinstance(message, dict) and (message.get("tool_calls") or message.get("function_call")):
        return False
    return isinstance(choice.get("text"), str) or (
        isinstance(message, dict) and isinstance(message.get("content"), str)
    )
