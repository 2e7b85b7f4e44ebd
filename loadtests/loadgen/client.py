"""Open-loop streaming client: sends each planned request at its scheduled time.

Algorithm: one dispatcher coroutine sleeps until each request's scheduled offset and spawns
a task for it without waiting for earlier ones (open loop, so a slow server cannot slow the
arrival process down; a dispatcher that falls behind sends at once and the lateness is
recorded). Each task POSTs ``/v1/chat/completions`` with ``stream: true`` and parses the SSE
stream line by line, timing the first content chunk (TTFT) and every later one (inter-token
latencies). Targets are used round-robin by request index: one target is "gateway" mode,
several with served-model names is "direct" mode. Every failure becomes a recorded error.

Parameters: ``request_timeout_s`` (hard cap per request), ``first_token_timeout_s`` (the
client gives up on a request whose first token has not come by then, as a user staring at an
empty reply would; once it streams, only ``request_timeout_s`` bounds it), ``max_connections``,
``keep_text`` (each record keeps the answer's text, for checks that compare it).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import httpx2 as httpx
import orjson

from loadtests.loadgen.record import RequestRecord
from loadtests.loadgen.request import PlannedRequest
from loadtests.loadgen.sse import SseParser

Clock = Callable[[], float]

CHAT_PATH = "/v1/chat/completions"


@dataclass(frozen=True, slots=True)
class Target:
    base_url: str
    model: str | None = None  # the served model name to send in direct mode
    # Sent with every request to this target (a peer gateway's API key, for instance).
    headers: Mapping[str, str] = field(default_factory=dict)

    def url(self) -> str:
        return self.base_url.rstrip("/") + CHAT_PATH


@dataclass(frozen=True, slots=True)
class ClientConfig:
    targets: Sequence[Target]
    request_timeout_s: float = 120.0
    max_connections: int = 4096
    first_token_timeout_s: float | None = None
    keep_text: bool = False


def kept_headers(headers: httpx.Headers) -> dict[str, str]:
    """The gateway's own response headers plus ``retry-after``."""
    return {
        k.lower(): v
        for k, v in headers.items()
        if k.lower().startswith("x-gateway-") or k.lower() == "retry-after"
    }


def _error_type(status: int, body: bytes) -> str:
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError:
        return f"http_{status}"
    error = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(error, dict) and (error.get("type") or error.get("code")):
        return f"http_{status}:{error.get('type') or error.get('code')}"
    return f"http_{status}"


class LoadClient:
    """Runs a plan against targets; create inside a running event loop."""

    def __init__(
        self,
        config: ClientConfig,
        *,
        clock: Clock = time.perf_counter,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        if not config.targets:
            raise ValueError("at least one target is required")
        self._config = config
        self._clock = clock
        limits = httpx.Limits(
            max_connections=config.max_connections,
            max_keepalive_connections=config.max_connections,
        )
        timeout = httpx.Timeout(config.request_timeout_s, connect=10.0)
        self._http = httpx.AsyncClient(limits=limits, timeout=timeout, transport=transport)
        self._start = clock()

    async def aclose(self) -> None:
        await self._http.aclose()

    def now(self) -> float:
        """Seconds since the client's run start."""
        return self._clock() - self._start

    async def run(self, plan: Sequence[PlannedRequest]) -> list[RequestRecord]:
        """Send the whole plan open-loop and return one record per request, in plan order."""
        self._start = self._clock()
        tasks: list[asyncio.Task[RequestRecord]] = []
        for request in plan:
            delay = request.at_s - self.now()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(self.send(request)))
        return list(await asyncio.gather(*tasks))

    async def send(self, request: PlannedRequest) -> RequestRecord:
        """Send one request now; never raises for upstream failures."""
        target = self._config.targets[request.index % len(self._config.targets)]
        record = RequestRecord(
            index=request.index,
            label=request.label,
            target=target.base_url,
            scheduled_s=request.at_s,
            sent_s=self.now(),
        )
        now = asyncio.get_running_loop().time()
        whole = now + self._config.request_timeout_s
        first = self._config.first_token_timeout_s
        try:
            async with asyncio.timeout_at(whole if first is None else min(whole, now + first)) as t:
                await self._exchange(request, target, record, lambda: t.reschedule(whole))
        except TimeoutError:
            record.error = "timeout"
        except httpx.TimeoutException:
            record.error = "timeout"
        except httpx.ConnectError:
            record.error = "connect"
        except httpx.HTTPError as exc:
            record.error = f"broken_stream:{type(exc).__name__}"
        record.e2e_s = self.now() - record.sent_s
        return record

    async def _exchange(
        self,
        request: PlannedRequest,
        target: Target,
        record: RequestRecord,
        first_token: Callable[[], None],
    ) -> None:
        content = orjson.dumps(request.body(target.model))
        headers = {"content-type": "application/json", **target.headers, **request.headers}
        stream = self._http.stream("POST", target.url(), content=content, headers=headers)
        async with stream as response:
            record.status = response.status_code
            record.headers = kept_headers(response.headers)
            if response.status_code != 200:
                record.error = _error_type(response.status_code, await response.aread())
                return
            await self._consume(response, record, first_token)

    async def _consume(
        self, response: httpx.Response, record: RequestRecord, first_token: Callable[[], None]
    ) -> None:
        parser = SseParser()
        last: float | None = None
        done = False
        if self._config.keep_text:
            record.text = ""
        async for line in response.aiter_lines():
            event = parser.feed(line)
            if event is None:
                continue
            if event.content:
                now = self.now() - record.sent_s
                if last is None:
                    record.ttft_s = now
                    first_token()
                else:
                    record.itl_s.append(now - last)
                last = now
                record.content_chunks += 1
                if record.text is not None:
                    record.text += event.content
            if event.usage is not None:
                record.prompt_tokens = event.usage.prompt_tokens
                record.completion_tokens = event.usage.completion_tokens
            if event.error is not None:
                record.error = event.error
            done = done or event.done
        if not done and record.error is None:
            record.error = "truncated"
