"""vLLM's routes beyond chat and completions: responses (``responses_api.py``), embeddings,
tokenize, detokenize, rerank and score.

Embeddings are deterministic unit vectors: each text's vector is drawn from a generator seeded
by the text, so the same text always gets the same vector (``dimensions`` long, default
``EMBEDDING_DIM``, at most ``MAX_EMBEDDING_DIM``), as ``float`` lists or, with
``encoding_format: base64`` (the openai SDK's default), little-endian float32 bytes in base64.
Tokenize and detokenize use the pseudo-tokeniser (detokenize knows the pieces of generated
text; other ids come back as ``<id>``). Rerank and score rate a pair of texts by the share of
the query's words found in the document (a deterministic stand-in for a cross-encoder's
relevance). None of these run on the engine; each passes the API server's front end like any
request. Token ids may be written as integral floats (``7.0``), as vLLM reads them.
"""

from __future__ import annotations

import base64
import random
import re
import time
import uuid
from typing import Any

import numpy as np
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from loadtests.sim import tokenizer
from loadtests.sim.generation import SimRequestError, chat_prompt
from loadtests.sim.openai_routes import OpenAIHandlers, error_response, read_json
from loadtests.sim.responses_api import ResponsesHandler

EMBEDDING_DIM = 64
# More dimensions than this are refused, as vLLM refuses more than its model has.
MAX_EMBEDDING_DIM = 4096
_WORD = re.compile(r"\w+")
Body = dict[str, Any]


def embedding(text: str, dimensions: int = EMBEDDING_DIM) -> list[float]:
    rng = random.Random(tokenizer.output_seed(text, 0))
    values = [rng.gauss(0.0, 1.0) for _ in range(dimensions)]
    norm = sum(v * v for v in values) ** 0.5 or 1.0
    return [v / norm for v in values]


def relevance(query: str, document: str) -> float:
    asked = set(_WORD.findall(query.lower()))
    found = set(_WORD.findall(document.lower()))
    return len(asked & found) / len(asked) if asked else 0.0


def _texts(value: object, field: str) -> list[str]:
    """A text, a list of texts, token ids or lists of token ids, as texts."""
    if isinstance(value, str):
        return [value]
    ids = tokenizer.token_ids(value)
    if value and ids is not None:
        return [tokenizer.decode(ids)]
    if isinstance(value, list) and value:
        return [t for item in value for t in _texts(item, field)]
    raise SimRequestError(400, f"{field} must be a text, a list of texts or token ids")


def _document_text(doc: object) -> str:
    text = doc.get("text") if isinstance(doc, dict) else doc
    if isinstance(text, str):
        return text
    raise SimRequestError(400, "every document must be a text or {text: ...}")


class VllmExtras:
    def __init__(self, handlers: OpenAIHandlers) -> None:
        self._h = handlers
        self.replica = handlers.replica

    async def _body(self, request: Request) -> Body:
        body = await read_json(request)
        self._h.check_model(body)
        await self._h.frontend()
        return body

    async def embeddings(self, request: Request) -> Response:
        try:
            body = await self._body(request)
            texts = _texts(body.get("input"), "input")
            [dims] = tokenizer.token_ids([body.get("dimensions") or EMBEDDING_DIM]) or [0]
            if not 1 <= dims <= MAX_EMBEDDING_DIM:
                raise SimRequestError(
                    400, f"dimensions must be a whole number from 1 to {MAX_EMBEDDING_DIM}"
                )
            as_base64 = body.get("encoding_format") == "base64"
        except SimRequestError as exc:
            return error_response(exc)
        data = [
            {
                "object": "embedding",
                "index": i,
                "embedding": _encoded(embedding(t, dims), as_base64),
            }
            for i, t in enumerate(texts)
        ]
        tokens = sum(tokenizer.count_tokens(t) for t in texts)
        usage = {"prompt_tokens": tokens, "total_tokens": tokens, "completion_tokens": 0}
        return JSONResponse(
            {"object": "list", "data": data, "model": self.replica.served_model, "usage": usage}
        )

    async def tokenize(self, request: Request) -> Response:
        try:
            body = await self._body(request)
            messages = body.get("messages")
            if isinstance(messages, list) and not all(isinstance(m, dict) for m in messages):
                raise SimRequestError(400, "every message must be an object")
            text = chat_prompt(messages) if isinstance(messages, list) else body.get("prompt")
            if not isinstance(text, str):
                raise SimRequestError(400, "give a prompt (text) or messages")
        except SimRequestError as exc:
            return error_response(exc)
        ids = tokenizer.encode(text)
        answer = {
            "count": len(ids),
            "max_model_len": self.replica.profile.max_model_len,
            "tokens": ids,
            "token_strs": tokenizer.pieces(text) if body.get("return_token_strs") else None,
        }
        return JSONResponse(answer)

    async def detokenize(self, request: Request) -> Response:
        try:
            body = await self._body(request)
            ids = tokenizer.token_ids(body.get("tokens"))
            if ids is None:
                raise SimRequestError(400, "tokens must be a list of token ids")
        except SimRequestError as exc:
            return error_response(exc)
        return JSONResponse({"prompt": tokenizer.decode(ids)})

    async def rerank(self, request: Request) -> Response:
        try:
            body = await self._body(request)
            query = body.get("query")
            docs = body.get("documents")
            if not isinstance(query, str) or not isinstance(docs, list):
                raise SimRequestError(400, "rerank needs a query (text) and documents (a list)")
            texts = [_document_text(d) for d in docs]
        except SimRequestError as exc:
            return error_response(exc)
        scores = [relevance(query, t) for t in texts]
        order = sorted(range(len(texts)), key=lambda i: -scores[i])
        results = [
            {"index": i, "document": {"text": texts[i]}, "relevance_score": scores[i]}
            for i in order
        ]
        top = body.get("top_n")
        if isinstance(top, int) and top > 0:
            results = results[:top]
        tokens = sum(tokenizer.count_tokens(query + t) for t in texts)
        return JSONResponse(
            {
                "id": f"rerank-{uuid.uuid4().hex}",
                "model": self.replica.served_model,
                "usage": {"total_tokens": tokens},
                "results": results,
            }
        )

    async def score(self, request: Request) -> Response:
        try:
            body = await self._body(request)
            firsts = _texts(body.get("text_1"), "text_1")
            seconds = _texts(body.get("text_2"), "text_2")
            if len(firsts) == 1:
                firsts = firsts * len(seconds)
            if len(firsts) != len(seconds):
                raise SimRequestError(400, "text_1 and text_2 must pair up")
        except SimRequestError as exc:
            return error_response(exc)
        pairs = list(zip(firsts, seconds, strict=True))
        data = [
            {"index": i, "object": "score", "score": relevance(a, b)}
            for i, (a, b) in enumerate(pairs)
        ]
        tokens = sum(tokenizer.count_tokens(a + b) for a, b in pairs)
        return JSONResponse(
            {
                "id": f"score-{uuid.uuid4().hex}",
                "object": "list",
                "created": int(time.time()),
                "model": self.replica.served_model,
                "data": data,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )


def _encoded(vector: list[float], as_base64: bool) -> list[float] | str:
    if not as_base64:
        return vector
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def vllm_extra_routes(handlers: OpenAIHandlers) -> list[Route]:
    extras = VllmExtras(handlers)
    return [
        Route("/v1/responses", ResponsesHandler(handlers).respond, methods=["POST"]),
        Route("/v1/embeddings", extras.embeddings, methods=["POST"]),
        Route("/tokenize", extras.tokenize, methods=["POST"]),
        Route("/detokenize", extras.detokenize, methods=["POST"]),
        Route("/v1/rerank", extras.rerank, methods=["POST"]),
        Route("/v1/score", extras.score, methods=["POST"]),
    ]
