"""From an HTTP request to engine work and back to text.

Algorithm: the prompt is tokenised with the pseudo-tokeniser; the output length is
``max_tokens`` unless ``ignore_eos`` is false and the deterministic natural length
``natural_length(prompt, seed)`` (uniform in ``[natural_stop.min_tokens,
natural_stop.max_tokens]`` from a hash of prompt and seed) is shorter, in which case the
request finishes with "stop". A request without ``max_tokens`` ends with "stop" at its
natural length cut to ``min(profile.default_max_tokens, max_model_len - prompt)`` (the
output lengths the profiles were calibrated with), as a model that reached its end of
sequence: only a limit the client set ends an answer with "length" (or ``ignore_eos``, which
runs to that default). Output text is
``tokenizer.generate(prompt, seed, n)``, so a prompt and seed always give the same text, and
every engine output becomes that many pieces of it; or, for a constrained request (a tool
call, JSON; ``structured.py``), the pieces of that reply (its natural length: ``ignore_eos``
does not apply), which a ``max_tokens`` shorter than it cuts. A prompt that ends with the
start of this model's own answer to a shorter prompt (a continuation: ``continuation.py``) is
answered with the rest of that answer, and stops where it would have stopped (without
``max_tokens``: where the first answer's default limit would have cut it).

Disconnects: a client disconnect aborts the engine request at once and frees its blocks,
whether it is waiting, prefilling or decoding. From the moment a request is accepted until its
response is complete, one watcher task per request awaits ``http.disconnect`` on the ASGI
``receive`` channel and calls ``Generation.abort``; the abort wakes the response's body
iterator, which ends with ``RequestAborted``. Streaming responses need this because
Starlette's ``StreamingResponse`` only listens for disconnects for ASGI spec < 2.4 and
otherwise notices a gone client only when a send fails, i.e. not before the next chunk (and
uvicorn drops sends to a closed connection silently). A request whose consumer stops early for
any other reason is aborted too.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import uuid
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from starlette.requests import ClientDisconnect
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from loadtests.sim import continuation, tokenizer
from loadtests.sim.continuation import Origin
from loadtests.sim.driver import RequestAborted, RequestStream
from loadtests.sim.engine import EngineRequest
from loadtests.sim.faults import StreamCut
from loadtests.sim.profile import NaturalStop, Profile
from loadtests.sim.replica import Replica


class SimRequestError(Exception):
    """A request the simulated server refuses, with its HTTP status."""

    def __init__(self, status: int, message: str, err_type: str = "BadRequestError") -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.err_type = err_type


def chat_prompt(
    messages: Sequence[Mapping[str, Any]], tools: object = None, *, open_last: bool = False
) -> str:
    """Render chat messages with a ChatML-like template (the shape, not the exact bytes);
    ``tools`` (their JSON) go first, as chat templates put them.

    ``open_last`` (vLLM's ``continue_final_message``): the last message is left open, without
    its end tag or a new assistant turn, so the answer continues it."""
    listed = orjson.dumps(tools).decode() if tools else ""
    parts = [f"<|im_start|>system\n<tools>{listed}</tools><|im_end|>\n"] if tools else []
    for i, m in enumerate(messages):
        content = m.get("content") or m.get("arguments") or m.get("output") or ""
        if isinstance(content, list):
            content = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        end = "" if open_last and i == len(messages) - 1 else "<|im_end|>\n"
        parts.append(f"<|im_start|>{m.get('role', 'user')}\n{content}{end}")
    if not open_last:
        parts.append("<|im_start|>assistant\n")
    return "".join(parts)


def natural_length(prompt: str, seed: int, stop: NaturalStop) -> int:
    span = max(1, stop.max_tokens - stop.min_tokens + 1)
    return stop.min_tokens + tokenizer.output_seed(prompt, seed ^ 0x5A5A) % span


@dataclass(frozen=True)
class Plan:
    prompt: str
    prompt_ids: list[int]
    max_tokens: int
    stop_at: int | None
    seed: int
    # Where the text comes from: the prompt itself, or the one whose answer it continues.
    origin: Origin | None = None


def _stop_and_origin(
    prompt: str, seed: int, stop: NaturalStop | None, capped: Profile | None
) -> tuple[int | None, Origin]:
    """The natural length left and where the text comes from: a continuation stops where its
    origin's answer stops (``capped``: a request without ``max_tokens``, whose first answer
    ended at the profile's default limit at the latest); one whose origin had already stopped
    is answered as a new prompt."""
    source = continuation.origin(prompt, seed)
    if source.offset:
        end = None if stop is None else natural_length(source.prompt, seed, stop)
        if capped is not None:
            room = capped.max_model_len - len(tokenizer.encode(source.prompt) or [0])
            cap = min(capped.default_max_tokens, room)
            end = cap if end is None else min(end, cap)
        if end is None:
            return None, source
        if end - source.offset >= 1:
            return end - source.offset, source
        source = Origin(prompt, 0)
    return (None if stop is None else natural_length(prompt, seed, stop)), source


def plan(
    replica: Replica,
    prompt: str,
    max_tokens: int | None,
    *,
    ignore_eos: bool,
    seed: int,
    length: int | None = None,
) -> Plan:
    """``length``: the natural length of a scripted reply (``structured.Reply``)."""
    profile = replica.profile
    ids = tokenizer.encode(prompt) or [0]
    room = profile.max_model_len - len(ids)
    if room < 1:
        raise SimRequestError(
            400,
            f"This model's maximum context length is {profile.max_model_len} tokens. "
            f"However, your request has {len(ids)} input tokens.",
        )
    if max_tokens is not None and (max_tokens < 1 or max_tokens > room):
        raise SimRequestError(
            400,
            f"max_tokens={max_tokens} is invalid: prompt has {len(ids)} tokens and "
            f"max_model_len is {profile.max_model_len}.",
        )
    default = min(profile.default_max_tokens, room)
    if length is not None:  # a scripted reply: whole unless the client's limit cuts it
        limit = min(room, max(default, length)) if max_tokens is None else max_tokens
        return Plan(prompt, ids, limit, max(1, length), seed)
    natural = None if ignore_eos else profile.natural_stop
    if max_tokens is not None:
        stop_at, source = _stop_and_origin(prompt, seed, natural, None)
        return Plan(prompt, ids, max_tokens, stop_at, seed, source)
    # No limit asked: the natural end ("stop"), within the calibrated output lengths (those
    # of the first answer, for a continuation).
    stop_at, source = _stop_and_origin(prompt, seed, natural, profile)
    return Plan(
        prompt, ids, default, None if stop_at is None else min(stop_at, default), seed, source
    )


@dataclass(frozen=True)
class Chunk:
    pieces: list[str]
    finish_reason: str | None


class Generation:
    """A planned request running on a replica, yielding text chunks per engine step.

    The replica's faults decide its ``fate`` on arrival (``faults.py``): a stalled request
    reaches the engine only after its stall (when its answer is first awaited); meanwhile
    ``stream`` is a stand-in with the same sizes. ``dropped`` is set once it is aborted."""

    def __init__(
        self, replica: Replica, p: Plan, prefix: str = "cmpl", script: list[str] | None = None
    ) -> None:
        self.replica = replica
        self.plan = p
        self.script = script  # the pieces of a scripted reply, else generated text
        self.request_id = f"{prefix}-{uuid.uuid4().hex}"
        self.dropped = asyncio.Event()
        self._req = EngineRequest(self.request_id, p.prompt_ids, p.max_tokens, p.stop_at)
        try:
            replica.engine.check(self._req)
        except ValueError as exc:
            raise SimRequestError(400, str(exc)) from exc
        continued = p.origin is not None and p.origin.offset > 0
        self.fate = replica.faults.admit(p.prompt, p.seed, continued=continued)
        self.stream = RequestStream(
            self.request_id, len(p.prompt_ids), p.max_tokens, replica.driver.clock.now()
        )
        self._submitted = False
        if not self.fate.stall_s:
            self._submit()

    def _submit(self) -> None:
        self.stream = self.replica.driver.submit(self._req)
        self._submitted = True

    async def _wait_stall(self) -> None:
        """Wait out the request's stall (a fault); raises ``RequestAborted`` if it is aborted
        meanwhile, without ever reaching the engine."""
        loop = asyncio.get_running_loop()
        stall = self.fate.stall_s
        over: asyncio.Future[None] = (
            loop.create_future()
            if stall == math.inf
            else asyncio.ensure_future(self.replica.faults.pause(stall))
        )
        left = loop.create_task(self.dropped.wait())
        waits: set[asyncio.Future[Any]] = {over, left}
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            over.cancel()
            left.cancel()
        if self.dropped.is_set():
            self.replica.faults.counts.stalls_abandoned += 1
            raise RequestAborted(self.request_id)
        self._submit()

    def abort(self) -> None:
        """Abort the engine request unless it already finished or was aborted (idempotent)."""
        self.dropped.set()
        if not self._submitted:
            self.stream.aborted = True
        elif self.stream.finish_reason is None and not self.stream.aborted:
            self.replica.driver.abort(self.request_id)

    async def chunks(self) -> AsyncGenerator[Chunk, None]:
        """Text per engine output; raises ``RequestAborted`` if the request is aborted."""
        source = self.plan.origin or Origin(self.plan.prompt, 0)
        total = source.offset + self.plan.max_tokens
        pieces = (
            iter(self.script)
            if self.script is not None
            else itertools.islice(
                tokenizer.generate(source.prompt, self.plan.seed, total), source.offset, None
            )
        )
        try:
            if not self._submitted:
                await self._wait_stall()
            async for out in self.stream.outputs():
                yield Chunk([next(pieces) for _ in range(out.new_tokens)], out.finish_reason)
        finally:
            self.abort()

    async def collect(self) -> tuple[str, str]:
        text: list[str] = []
        reason = "length"
        async for chunk in self.chunks():
            text.extend(chunk.pieces)
            reason = chunk.finish_reason or reason
        return "".join(text), reason


def watch_disconnect(receive: Receive, gen: Generation) -> asyncio.Task[None]:
    """Start the request's watcher: abort ``gen`` as soon as ``http.disconnect`` arrives.

    The caller cancels the task when its response is done.
    """
    return asyncio.get_running_loop().create_task(_abort_on_disconnect(receive, gen))


async def _abort_on_disconnect(receive: Receive, gen: Generation) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    gen.abort()


async def collect_unless_disconnected(receive: Receive, gen: Generation) -> tuple[str, str]:
    """``gen.collect()``; a client disconnect aborts it at once and raises a 499."""
    watcher = watch_disconnect(receive, gen)
    try:
        return await gen.collect()
    except RequestAborted as exc:
        raise SimRequestError(499, "client disconnected", "ClientDisconnected") from exc
    finally:
        watcher.cancel()


class GenerationStream(StreamingResponse):
    """SSE response of a generation that aborts it the moment the client disconnects.

    Whatever the ASGI spec version, the disconnect watcher runs next to the body iterator for
    the whole response (one task per request, nothing per token). It starts as soon as the
    route returns this response, with no suspension since the generation was submitted, and
    a disconnect that came earlier is reported by the first ``receive``. On a disconnect the
    generation is aborted in the engine and the body iterator ends with ``RequestAborted``.
    """

    def __init__(self, gen: Generation, events: AsyncGenerator[bytes, None]) -> None:
        super().__init__(events, media_type="text/event-stream")
        self.gen = gen
        self._events = events

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        watcher = watch_disconnect(receive, self.gen)
        try:
            await self.stream_response(send)
        except RequestAborted:
            return  # the client is gone; its engine request is already aborted
        except StreamCut:
            # A death (a fault): return with the response incomplete; the server closes the
            # connection without the chunked terminator, as a dying process's socket would.
            return
        except OSError as exc:  # a server that reports the closed connection on send
            raise ClientDisconnect() from exc
        finally:
            watcher.cancel()
            self.gen.abort()
            await self._events.aclose()
        if self.background is not None:
            await self.background()
