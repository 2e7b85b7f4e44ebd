"""TGI's native routes: ``POST /``, ``/generate``, ``/generate_stream`` and ``/info``.

``/generate_stream`` sends one SSE event per token as TGI does; the last event carries the
full ``generated_text`` and ``details``. ``POST /`` is TGI's compatibility route (the one
huggingface_hub's ``InferenceClient.text_generation`` calls): the same body plus ``stream``;
it streams as ``/generate_stream`` or answers ``/generate``'s object wrapped in a list.
``parameters.return_full_text`` puts the prompt before the generated text. Token ids come from
the pseudo-tokeniser and the log-probabilities are a fixed function of the id (the shape
matters, not the value).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from loadtests.sim import tokenizer
from loadtests.sim.generation import (
    Generation,
    GenerationStream,
    SimRequestError,
    collect_unless_disconnected,
    plan,
)
from loadtests.sim.openai_routes import read_json
from loadtests.sim.replica import Replica

_FINISH = {"stop": "eos_token", "length": "length"}


def _token(piece: str) -> dict[str, Any]:
    tid = tokenizer.encode(piece)[0]
    return {"id": tid, "text": piece, "logprob": -((tid % 997) / 997.0), "special": False}


def _error(exc: SimRequestError) -> JSONResponse:
    kind = "validation" if exc.status < 500 else "generation"
    return JSONResponse({"error": exc.message, "error_type": kind}, status_code=exc.status)


class TgiHandlers:
    def __init__(self, replica: Replica) -> None:
        self.replica = replica

    def _start(self, body: dict[str, Any]) -> tuple[Generation, dict[str, Any]]:
        inputs = body.get("inputs")
        if not isinstance(inputs, str) or not inputs:
            raise SimRequestError(422, "`inputs` must be a non-empty string")
        params = body.get("parameters") or {}
        if not isinstance(params, dict):
            raise SimRequestError(422, "`parameters` must be an object")
        max_new = params.get("max_new_tokens")
        seed = params.get("seed")
        p = plan(
            self.replica,
            inputs,
            None if max_new is None else int(max_new),
            ignore_eos=False,
            seed=int(seed or 0),
        )
        return Generation(self.replica, p, "tgi"), params

    def _details(self, gen: Generation, reason: str, params: dict[str, Any]) -> dict[str, Any]:
        return {
            "finish_reason": _FINISH.get(reason, reason),
            "generated_tokens": gen.stream.completion_tokens,
            "seed": params.get("seed"),
        }

    async def generate(self, request: Request) -> Response:
        try:
            out = await self._generated(request, await read_json(request))
        except SimRequestError as exc:
            return _error(exc)
        return JSONResponse(out)

    async def generate_stream(self, request: Request) -> Response:
        try:
            gen, params = self._start(await read_json(request))
        except SimRequestError as exc:
            return _error(exc)
        return GenerationStream(gen, self._events(gen, params))

    async def compat_generate(self, request: Request) -> Response:
        """``POST /``: stream when the body says ``stream: true``, else a one-item list."""
        try:
            body = await read_json(request)
            if body.get("stream"):
                gen, params = self._start(body)
                return GenerationStream(gen, self._events(gen, params))
            return JSONResponse([await self._generated(request, body)])
        except SimRequestError as exc:
            return _error(exc)

    async def _generated(self, request: Request, body: dict[str, Any]) -> dict[str, Any]:
        gen, params = self._start(body)
        text, reason = await collect_unless_disconnected(request.receive, gen)
        full = body["inputs"] + text if params.get("return_full_text") else text
        out: dict[str, Any] = {"generated_text": full}
        if params.get("details"):
            details = self._details(gen, reason, params)
            details["prefill"] = []
            details["tokens"] = [_token(p) for p in tokenizer.pieces(text)]
            out["details"] = details
        return out

    async def _events(self, gen: Generation, params: dict[str, Any]) -> AsyncGenerator[bytes, None]:
        text: list[str] = []
        index = 0
        async for chunk in gen.chunks():
            for i, piece in enumerate(chunk.pieces):
                index += 1
                text.append(piece)
                last = chunk.finish_reason is not None and i == len(chunk.pieces) - 1
                event = {
                    "index": index,
                    "token": _token(piece),
                    "top_tokens": None,
                    "generated_text": "".join(text) if last else None,
                    "details": None,
                }
                if last and chunk.finish_reason is not None:
                    details = self._details(gen, chunk.finish_reason, params)
                    details["input_length"] = gen.stream.prompt_tokens
                    event["details"] = details
                yield b"data:" + orjson.dumps(event) + b"\n\n"

    async def info(self, request: Request) -> Response:
        p = self.replica.profile
        return JSONResponse(
            {
                "model_id": self.replica.served_model,
                "model_sha": None,
                "model_pipeline_tag": "text-generation",
                "max_concurrent_requests": 128,
                "max_best_of": 2,
                "max_stop_sequences": 4,
                "max_input_tokens": p.max_model_len - 1,
                "max_total_tokens": p.max_model_len,
                "max_batch_total_tokens": p.num_kv_blocks * p.block_size,
                "max_batch_size": p.max_num_seqs,
                "waiting_served_ratio": 0.3,
                "max_waiting_tokens": 20,
                "validation_workers": 2,
                "max_client_batch_size": 4,
                "router": "text-generation-router",
                "version": "3.0.1-sim",
                "sha": None,
                "docker_label": None,
            }
        )


def tgi_routes(replica: Replica) -> list[Route]:
    h = TgiHandlers(replica)
    return [
        Route("/", h.compat_generate, methods=["POST"]),
        Route("/generate", h.generate, methods=["POST"]),
        Route("/generate_stream", h.generate_stream, methods=["POST"]),
        Route("/info", h.info, methods=["GET"]),
    ]
