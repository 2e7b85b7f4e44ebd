"""``latency-gateway route``: the gateway's pool choice for requests read as JSON lines, with
no backend, so a policy can be tried on one's own traffic before it serves.

Each line is a request body (chat, with ``messages``; or completions, with ``prompt``); its
``model`` is optional (``--model``, else the policy's only ``route: auto`` model). The line
goes through the gateway's own stages, in its order: parsing, the rewrite stage, the
embedding the cache stage would make for routing (when the policy's learned difficulty model
or kNN vote needs one; the encoder is loaded offline, once), then the plan stage. Out comes
one JSON line: ``pool``, ``score`` (the difficulty in [0, 1]), ``length`` (class),
``prompt_tokens``, ``reason`` (as in ``x-gateway-route-reason``); or the OpenAI-style
``error`` the gateway would answer with, and its HTTP ``status``. A line carries no headers:
it is planned at standard priority, with no tenant and no session.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from prometheus_client import CollectorRegistry

from gateway.cache.store.cache_keys import query_text
from gateway.classify.exemplars import read_exemplars
from gateway.classify.knn import KnnVote
from gateway.classify.model import ROUTING_TEXT_CHARS
from gateway.classify.vector_use import VectorUse
from gateway.embedding import Encoder
from gateway.errors import GatewayError, InvalidRequest
from gateway.metrics import GatewayMetrics
from gateway.openai.parse import parse_request
from gateway.openai.request import Endpoint
from gateway.path.context import RequestContext, classify
from gateway.path.plan import plan_pool
from gateway.path.rewrite import rewrite_request
from gateway.policy.compile import CompiledPolicy


def needs_encoder(policy: CompiledPolicy) -> bool:
    """The policy routes on embeddings (learned model or kNN vote) for some auto model."""
    embeds = policy.classify.vector_use is VectorUse.EMBED or policy.source.classify.knn.enabled
    return embeds and any(route.auto for route in policy.models.values())


@dataclass
class DryRun:
    policy: CompiledPolicy
    model: str | None = None  # for lines without one
    encoder: Encoder | None = None  # None: no embeddings (the heuristic decides)

    def __post_init__(self) -> None:
        self._metrics = GatewayMetrics(CollectorRegistry())
        self._knn = self._build_knn() if self.encoder is not None else None
        autos = [name for name, route in self.policy.models.items() if route.auto]
        self._default = self.model or (autos[0] if len(autos) == 1 else None)

    def lines(self, lines: Iterable[str]) -> Iterator[dict[str, Any]]:
        for line in lines:
            if line.strip():
                yield self.decide(line)

    def decide(self, line: str) -> dict[str, Any]:
        try:
            return self._decide(line)
        except GatewayError as exc:
            return {"status": exc.http_status(), **exc.body()}

    def _decide(self, line: str) -> dict[str, Any]:
        try:
            body = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidRequest(f"Not a JSON line: {exc}") from None
        if isinstance(body, dict) and "model" not in body:
            if self._default is None:
                raise InvalidRequest("No model: give the line a 'model' or pass --model.")
            body = {**body, "model": self._default}
        endpoint: Endpoint = "chat"
        if isinstance(body, dict) and "prompt" in body:
            endpoint = "completions"
        parsed = parse_request(endpoint, json.dumps(body).encode())
        ctx = RequestContext("route", 0.0, parsed, self.policy, {})
        ctx = rewrite_request(ctx, None, self._metrics, {})
        ctx = self._with_embedding(ctx)
        plan = plan_pool(ctx)
        classes = classify(ctx)
        return {
            "pool": plan.pool.name,
            "score": round(classes.difficulty.score, 4),
            "length": plan.length,
            "prompt_tokens": classes.prompt_tokens,
            "reason": plan.reason,
        }

    def _with_embedding(self, ctx: RequestContext) -> RequestContext:
        route = self.policy.models.get(ctx.request.model)
        text = query_text(ctx.request.endpoint, ctx.request.body)
        if self.encoder is None or route is None or not route.auto or not text:
            return ctx
        vector = self.encoder.encode([text[:ROUTING_TEXT_CHARS]])[0]
        vote = self._knn.vote(vector) if self._knn is not None else None
        learned = self.policy.classify.vector_use is VectorUse.EMBED
        return replace(ctx, query_vector=vector if learned else None, difficulty_vote=vote)

    def _build_knn(self) -> KnnVote | None:
        settings = self.policy.source.classify.knn
        if not settings.enabled or self.encoder is None:
            return None
        prompts, labels = read_exemplars(Path(settings.exemplars))
        vectors = np.asarray(self.encoder.encode(prompts), dtype=np.float32)
        return KnnVote.build(vectors, labels, k=settings.k, weight=settings.weight)
