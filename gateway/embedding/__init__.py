"""Sentence embeddings for the gateway: one encoder, micro-batched off the event loop.

The semantic cache embeds each eligible request once (``MicroBatcher.embed``); anything else
that wants the same vector (the classifier's kNN vote) reuses it rather than embedding again.
"""

from gateway.embedding.batcher import BatcherClosed, MicroBatcher
from gateway.embedding.encoder import Encoder, SentenceEncoder, Vectors, default_model_path
from gateway.embedding.slot import EmbedderSettings, EmbedderSlot, SlotState

__all__ = [
    "BatcherClosed",
    "EmbedderSettings",
    "EmbedderSlot",
    "Encoder",
    "MicroBatcher",
    "SentenceEncoder",
    "SlotState",
    "Vectors",
    "default_model_path",
]
