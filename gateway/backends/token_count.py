"""How many prompt tokens a backend counts for a prompt of so many characters.

The gateway does not run the backends' tokenizers; "four characters a token" is a guess that
depends on the tokenizer, the language and the chat template (the engine counts the role
markers and special tokens too). Every response that reports ``usage`` says what the engine
counted for the characters the gateway sent, so the gateway learns the count per backend.

Algorithm: a least-squares line, ``tokens = a + b * chars``, over the observed pairs with
exponential forgetting (each observation's weight decays by ``decay`` per later one, so the
last few hundred count), plus two fixed pseudo-observations on the prior line ``chars / 4``
(at 0 and at ``_PRIOR_AT`` characters, weight ``_PRIOR_WEIGHT`` each). The prior answers
before the first usage, keeps the line defined when every prompt had the same length, and
extends the slope to prompts far longer than any seen; a few dozen observations outweigh it.
``a`` is the template's overhead per request, ``1 / b`` the characters per token.

An estimate stays between ``chars / 16`` and ``chars + 256`` whatever the fit, so one odd
answer (a backend that counts an image, or truncates a prompt) cannot make it absurd.
"""

from __future__ import annotations

import math

_PRIOR_CHARS_PER_TOKEN = 4.0
_PRIOR_AT = 8000.0  # characters: the prior's second point, so its slope reaches long prompts
_PRIOR_WEIGHT = 0.5


def _point(x: float, y: float, weight: float) -> tuple[float, ...]:
    """One weighted observation as the sums the fit keeps: w, wx, wy, wxx, wxy."""
    return (weight, weight * x, weight * y, weight * x * x, weight * x * y)


# The prior's two points, (0, 0) and (_PRIOR_AT, _PRIOR_AT / 4), as sums.
_PRIOR = tuple(
    a + b
    for a, b in zip(
        _point(0.0, 0.0, _PRIOR_WEIGHT),
        _point(_PRIOR_AT, _PRIOR_AT / _PRIOR_CHARS_PER_TOKEN, _PRIOR_WEIGHT),
        strict=True,
    )
)


class TokenCount:
    """A backend's prompt-token count as a function of the characters sent. Not thread-safe."""

    __slots__ = ("_decay", "_real", "observed")

    def __init__(self, *, decay: float = 0.995) -> None:
        if not 0.0 < decay <= 1.0:
            raise ValueError(f"decay must be in (0, 1], got {decay}")
        self._decay = decay
        self._real: tuple[float, ...] = (0.0,) * 5  # the observations' decayed sums
        self.observed = 0

    def observe(self, chars: float, tokens: float) -> None:
        """The backend counted ``tokens`` prompt tokens for ``chars`` characters sent."""
        if not (math.isfinite(chars) and math.isfinite(tokens)) or chars < 0 or tokens <= 0:
            return
        new = _point(chars, tokens, 1.0)
        self._real = tuple(s * self._decay + n for s, n in zip(self._real, new, strict=True))
        self.observed += 1

    def estimate(self, chars: float) -> float:
        """The tokens the backend is expected to count for ``chars`` characters."""
        a, b = self.line()
        return min(max(a + b * chars, chars / 16.0), chars + 256.0)

    @property
    def chars_per_token(self) -> float:
        """The line's characters per token (its slope's inverse; inf for a flat line)."""
        b = self.line()[1]
        return 1.0 / b if b > 0 else math.inf

    def line(self) -> tuple[float, float]:
        """``(a, b)``: tokens = a + b * chars."""
        w, x, y, xx, xy = (r + p for r, p in zip(self._real, _PRIOR, strict=True))
        spread = w * xx - x * x  # > 0: the prior's two points differ in x
        b = (w * xy - x * y) / spread
        return (y - b * x) / w, b
