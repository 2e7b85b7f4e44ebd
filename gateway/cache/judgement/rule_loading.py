"""Which hit rule a cache runs, read off the event loop at start.

Decision, from the policy's ``semantic`` settings:
- ``threshold`` set: the old rule (cosine, then the guard); nothing to load;
- ``verifier: cross_encoder`` (the default): the cross-encoder's weights are loaded in a
  thread (torch is imported only then) and run by a ``CrossWorker``; the cheap rule takes
  the cross-encoder's cosine floor (``cross_rule.py``). Weights that cannot be read (or a
  missing torch) are logged and the feature verifier is used instead, at the same
  ``max_false_hit_rate``;
- ``verifier: features``, or the fallback: the feature verifier (``verifier.py``); weights
  that cannot be read leave the exact cache only (None).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from gateway.cache.judgement.cross_encoder import CrossEncoder, load_cross_encoder
from gateway.cache.judgement.cross_rule import CrossCheck, cross_rules
from gateway.cache.judgement.cross_worker import CrossWorker
from gateway.cache.judgement.verdict import HitRule, hit_rule
from gateway.cache.judgement.verifier import load_verifier
from gateway.schema import SemanticCache

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SemanticRules:
    rule: HitRule  # every candidate
    check: CrossCheck | None = None  # the best candidate that passed ``rule`` (cross-encoder)
    worker: CrossWorker | None = None

    async def close(self) -> None:
        if self.worker is not None:
            await self.worker.close()


async def load_rules(settings: SemanticCache) -> SemanticRules | None:
    """The rules for ``settings`` (None: no semantic hit can be decided)."""
    if not settings.uses_verifier:
        return SemanticRules(hit_rule(settings, None))
    if settings.verifier == "cross_encoder":
        cross = settings.cross_encoder
        try:
            encoder = await asyncio.to_thread(_loaded, cross.path, settings.threads)
        except (OSError, ValueError, ImportError):
            log.exception("the cross-encoder did not load; the feature verifier decides hits")
        else:
            worker = CrossWorker(
                encoder.score, max_batch=cross.max_batch, max_pending=cross.max_pending
            )
            rule, check = cross_rules(settings, encoder.file, worker)
            return SemanticRules(rule, check, worker)
    try:
        verifier = await asyncio.to_thread(load_verifier, settings.verifier_path)
    except (OSError, ValueError):
        log.exception("the cache verifier did not load; the semantic cache stays off")
        return None
    return SemanticRules(hit_rule(settings, verifier))


def _loaded(path: str | None, threads: int) -> CrossEncoder:
    """The cross-encoder, loaded and run once (its first forward pass sets kernels up)."""
    encoder = load_cross_encoder(path, threads=threads)
    encoder.score([("how are you?", "how are you doing?")])
    return encoder
