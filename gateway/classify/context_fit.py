"""Does a request fit a pool's context window? The numbers for a clear 400 when it does not.

A request needs ``prompt_tokens + completion_tokens`` positions, where ``completion_tokens``
is the client's ``max_tokens`` (or ``max_completion_tokens``), or ``default_max_tokens`` when
it gave none (default 1: servers such as vLLM then generate up to whatever room is left, so
only the prompt plus one token must fit). Parameters of ``check_context``:

- ``max_context``: the pool's context window in tokens;
- ``estimate_slack``: the relative error allowed on an estimated prompt count, so that a
  request is refused only when it would overflow even if the estimate were that much too
  high (use ~0.15 with the estimate, 0 with a real tokenizer).

``ContextFit.certain`` is False when an estimated count lies within the slack of the limit
either way: the verdict could flip, so a gateway with a tokenizer file should recount
exactly (``TokenizerJsonCounter``, ~1.5 ms per 1,000 tokens) and check again. Exact counts
are always certain. This keeps the costly exact count off all but the borderline requests.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ContextFit:
    """The verdict and every number that went into it."""

    fits: bool
    prompt_tokens: int
    completion_tokens: int
    max_context: int
    completion_requested: bool  # False when completion_tokens is the default
    prompt_estimated: bool
    certain: bool  # the verdict holds whatever the estimate's error within the slack

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def message(self) -> str:
        """The client-facing explanation, worded like OpenAI's ``context_length_exceeded``."""
        about = "about " if self.prompt_estimated else ""
        text = (
            f"This model's maximum context length is {self.max_context} tokens. However, "
            f"you requested {about}{self.total_tokens} tokens ({about}{self.prompt_tokens} "
            f"in the messages, {self.completion_tokens} in the completion). "
        )
        if self.completion_requested:
            return text + "Please reduce the length of the messages or completion."
        return text + "Please reduce the length of the messages."


def check_context(
    prompt_tokens: int,
    max_tokens: int | None,
    max_context: int,
    *,
    default_max_tokens: int = 1,
    prompt_estimated: bool = False,
    estimate_slack: float = 0.0,
) -> ContextFit:
    """Whether ``prompt_tokens`` plus the completion budget fit in ``max_context``."""
    if max_context <= 0:
        raise ValueError("max_context must be > 0")
    if not 0.0 <= estimate_slack < 1.0:
        raise ValueError("estimate_slack must be in [0, 1)")
    completion = max_tokens if max_tokens is not None else default_max_tokens
    slack = estimate_slack if prompt_estimated else 0.0
    # Benefit of the doubt: an estimate may be high, so refuse only beyond the slack.
    fits = prompt_tokens * (1.0 - slack) + completion <= max_context
    fits_if_low = prompt_tokens * (1.0 + slack) + completion <= max_context
    return ContextFit(
        fits=fits,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion,
        max_context=max_context,
        completion_requested=max_tokens is not None,
        prompt_estimated=prompt_estimated,
        certain=fits == fits_if_low,
    )
