"""Whether the difficulty score reads the request's sentence embedding.

A decision of the compiled policy (``policy/difficulty_routing.py``), read by the cache stage
and the ``route`` dry run:

- ``NONE``: the score never reads an embedding (the heuristic, or the learned text model:
  the default);
- ``EMBED``: an auto-routed request gets an embedding for its score: the one the semantic
  cache made for it, else one made for routing (one embedding per request; ``classify.model.
  embedding: true``, or a weights file of the embedding-only model).
"""

from __future__ import annotations

from enum import Enum


class VectorUse(Enum):
    NONE = "none"
    EMBED = "embed"
