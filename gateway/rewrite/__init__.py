"""Prompt rewriting for backend prefix-cache hits, and prefix-break explanations.

Public API:

- ``canonicalize(body, config) -> RewriteResult`` (``.body``, ``.record``): the canonical
  request body and a ``RewriteRecord`` of what changed; pure, never modifies ``body``.
- ``RewriteConfig`` (frozen; ``RewriteConfigError`` on bad settings), ``ExtraPattern``,
  ``NotePlacement``, ``Transform`` (the opt-in rewrites outside the system prompt).
- ``serialize(body) -> SerializedPrompt``: the comparison text of a prompt.
- ``PrefixExplainer(matcher, count_tokens).explain(previous, current) -> PrefixBreak | None``.
- ``MemoryPrefixStore(explainer, clock=...)``, a ``PrefixTracker``:
  ``observe(session, prompt) -> PrefixBreak | None``.
"""

from gateway.rewrite.canonical import DEFAULT_CONFIG, RewriteResult, canonicalize
from gateway.rewrite.config import (
    ExtraPattern,
    NotePlacement,
    RewriteConfig,
    RewriteConfigError,
    Transform,
)
from gateway.rewrite.explain import (
    BreakCause,
    PrefixBreak,
    PrefixExplainer,
    TokenCounter,
    estimate_tokens,
)
from gateway.rewrite.record import MovedFragment, RewriteRecord
from gateway.rewrite.serialize import SerializedPrompt, serialize
from gateway.rewrite.session import MemoryPrefixStore, PrefixTracker

__all__ = [
    "DEFAULT_CONFIG",
    "BreakCause",
    "ExtraPattern",
    "MemoryPrefixStore",
    "MovedFragment",
    "NotePlacement",
    "PrefixBreak",
    "PrefixExplainer",
    "PrefixTracker",
    "RewriteConfig",
    "RewriteConfigError",
    "RewriteRecord",
    "RewriteResult",
    "SerializedPrompt",
    "TokenCounter",
    "Transform",
    "canonicalize",
    "estimate_tokens",
    "serialize",
]
