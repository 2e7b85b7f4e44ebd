"""The gateway's TTFT predictor (``gateway/backends/ttft.py``) checked against a real engine.

A gateway runs in this process on real uvicorn (``policy.py``: default admission with no
TTFT objective, so nothing is refused for a prediction; as many in flight as the server has
slots) in front of one real server (llama.cpp or vLLM CPU) serving Gemma 3 270M; its
``gateway.access`` lines are captured. Cells: every
prompt length of ``Plan.lengths`` (words of ``prompts.filler``, after a nonce that defeats
the prefix cache) at every number of concurrent clients of ``Plan.clients``; closed loop:
each client sends its requests one after the other, streamed chat completions of
``max_tokens`` tokens (``ignore_eos``). One warm-up pass over all cells (``warmup_rounds``
requests per client and cell) comes first, then ``passes`` measured passes (``rounds``
each), so the measured requests see a predictor that has learned from all kinds of load.

Per request, from its access-log line (found by ``x-gateway-request-id``): the predictor's
inputs (``ttft_inputs``), its prediction at dispatch (``ttft_predicted_ms``) and the time to
first token it then observed at the replica (``ttft_backend_ms``, the queue excluded), the
same pair as ``gateway_ttft_prediction_error_seconds`` (which counts it when
``ttft_supported``: not the prior's); and what the prior alone (a
``TtftModel`` that has seen nothing) predicts from the same inputs. ``predictor_table.py``
turns these into errors per cell.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx2 as httpx
import orjson

from gateway.access_log import ACCESS_LOGGER
from gateway.app import build_app
from gateway.backends.ttft import TtftFeatures, TtftModel
from gateway.policy import load_policy_text
from loadtests.kit.serving import serve
from loadtests.real.policy import real_policy
from loadtests.real.probe import metrics
from loadtests.real.prompts import filler

PUBLIC = "gemma"
ERROR_COUNT = "gateway_ttft_prediction_error_seconds_count"


@dataclass(frozen=True, slots=True)
class Plan:
    clients: tuple[int, ...] = (1, 2, 4)
    lengths: tuple[tuple[str, int], ...] = (("short", 32), ("long", 1024))
    rounds: int = 4  # requests per client, cell and measured pass
    warmup_rounds: int = 1  # requests per client and cell in the warm-up pass
    passes: int = 2
    max_tokens: int = 16

    def cells(self) -> list[tuple[str, int, int]]:
        """(name, prompt words, clients) in the order they run."""
        return [(f"{n} x{c}", words, c) for n, words in self.lengths for c in self.clients]

    def requests(self) -> int:
        per_pass = sum(self.clients) * len(self.lengths)
        return per_pass * (self.warmup_rounds + self.passes * self.rounds)


@dataclass(frozen=True, slots=True)
class Sample:
    cell: str
    warmup: bool
    status: int
    observed_s: float | None  # at the replica: dispatch to first token
    predicted_s: float | None
    prior_s: float | None  # the prior's prediction from the same inputs
    supported: bool = False  # the prediction rested on observations (the access log's)


@dataclass(slots=True)
class Run:
    engine: str
    plan: Plan
    samples: list[Sample] = field(default_factory=list)
    error_count: float = 0.0  # observations in the gateway's prediction-error histogram


async def measure(url: str, engine: str, plan: Plan, *, slots: int = 4) -> Run:
    """Run ``plan`` through a fresh gateway in front of the server at ``url``."""
    policy = load_policy_text(
        real_policy(url, engine, inflight=slots, scrape_s=2.0, access_log=True)
    )
    run = Run(engine, plan)
    with access_lines() as lines, serve(build_app(policy)) as gateway:
        async with httpx.AsyncClient(timeout=600) as http:
            sent = await _drive(http, gateway, plan)
            run.error_count = (await metrics(http, gateway)).get(ERROR_COUNT, 0.0)
    prior = TtftModel()
    run.samples = [
        _sample(cell, warmup, status, lines.get(rid), prior) for cell, warmup, rid, status in sent
    ]
    return run


@contextmanager
def access_lines() -> Iterator[dict[str, dict[str, Any]]]:
    """The gateway's access-log lines while inside, by request id."""
    found: dict[str, dict[str, Any]] = {}
    logger = logging.getLogger(ACCESS_LOGGER)
    handler = _Collect(found)
    level, propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        yield found
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate


class _Collect(logging.Handler):
    def __init__(self, found: dict[str, dict[str, Any]]) -> None:
        super().__init__()
        self._found = found

    def emit(self, record: logging.LogRecord) -> None:
        line = orjson.loads(record.getMessage())
        self._found[line["id"]] = line


async def _drive(
    http: httpx.AsyncClient, gateway: str, plan: Plan
) -> list[tuple[str, bool, str, int]]:
    """Every pass and cell in order; (cell, warm-up, request id, status) per request."""
    sent: list[tuple[str, bool, str, int]] = []
    for index in range(1 + plan.passes):
        warmup = index == 0
        rounds = plan.warmup_rounds if warmup else plan.rounds
        for cell, words, clients in plan.cells():
            loops = [_client(http, gateway, words, rounds, plan.max_tokens) for _ in range(clients)]
            for answers in await asyncio.gather(*loops):
                sent.extend((cell, warmup, rid, status) for rid, status in answers)
    return sent


async def _client(
    http: httpx.AsyncClient, gateway: str, words: int, rounds: int, max_tokens: int
) -> list[tuple[str, int]]:
    """One closed-loop client: ``rounds`` requests, each after the previous one ended."""
    return [await _one(http, gateway, words, max_tokens) for _ in range(rounds)]


async def _one(
    http: httpx.AsyncClient, gateway: str, words: int, max_tokens: int
) -> tuple[str, int]:
    """One streamed chat completion read to its end: its request id and status."""
    body = {
        "model": PUBLIC,
        "messages": [{"role": "user", "content": filler(words)}],
        "max_tokens": max_tokens,
        "ignore_eos": True,
        "stream": True,
    }
    async with http.stream("POST", gateway + "/v1/chat/completions", json=body) as response:
        async for _ in response.aiter_bytes():
            pass
        return response.headers.get("x-gateway-request-id", ""), response.status_code


def _sample(
    cell: str, warmup: bool, status: int, line: dict[str, Any] | None, prior: TtftModel
) -> Sample:
    if line is None:  # no access-log line: nothing was predicted or observed
        return Sample(cell, warmup, status, None, None, None)
    inputs = line.get("ttft_inputs")
    return Sample(
        cell,
        warmup,
        status,
        _seconds(line.get("ttft_backend_ms")),
        _seconds(line.get("ttft_predicted_ms")),
        None if inputs is None else prior.predict(TtftFeatures(**inputs)),
        line.get("ttft_supported") is True,
    )


def _seconds(milliseconds: float | None) -> float | None:
    return None if milliseconds is None else milliseconds / 1000.0
