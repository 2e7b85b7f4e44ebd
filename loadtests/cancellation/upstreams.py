"""Benchmark: how fast a client's departure reaches the backend through the gateway, per phase.

Method: the gateway runs as a real subprocess (``python -m gateway serve``) with a one-backend
policy (pool ``main``, public model ``bench``) in front of one upstream at a time, each served
in this process on its own uvicorn thread (``loadtests.serving.serve_app``). The ``queued``
phase has a gateway process of its own, whose backend has ``max_inflight: 1`` (so the pool's
concurrency limit is 1), and the other phases run on one with ``max_inflight: 1000``:

- ``fake``: ``loadtests.fake_upstream``. It records the ``time.monotonic()`` of every
  cancellation it notices (``FakeLog.left_times``): Starlette's disconnect listener for
  streams, its own watcher for whole answers.
- ``sim``: the backend simulator (profile ``qwen2.5-1.5b-h100``, vLLM flavour, ``RealClock``
  at ``--sim-speed``). A client disconnect aborts the engine request; a coroutine run on the
  simulator's loop waits (``EngineDriver.wait_until``, event-driven) until the engine's abort
  counter reaches the expected value and returns ``time.monotonic()`` then.

Trials are sequential. Each one opens a raw TCP socket to the gateway, sends a hand-written
HTTP/1.1 ``POST /v1/chat/completions``, waits until the request is in the phase to measure,
records ``t0 = time.monotonic()`` and closes the socket. The delay is the time from ``t0``
until the upstream saw the departure (``queued``: until the gateway dropped the request from
its queue), bounded by ``--bound-s`` (later counts as not detected). Phases:

- ``queued``: the client leaves while its request waits in the gateway's admission queue. One
  long request holds the pool's only slot for the whole phase (fake: a stream of 1,000,000
  tokens 0.5 s apart; sim: a whole answer of ``max_model_len`` minus the prompt tokens, about
  68 s at speed 2, replaced between trials when less than ``ARRIVE_TIMEOUT_S + --bound-s + 1``
  s of it are left: it is left to finish, then a new one is sent). Each trial sends a small
  streaming request, reads the gateway's ``/metrics`` (one keep-alive connection, back to
  back) until ``gateway_queue_depth{pool="main"}`` (summed over lanes and priorities) is 1,
  closes the socket and reads ``/metrics`` again, back to back, until the depth is 0. The
  delay ends when the first answer showing 0 arrives: an upper bound, whose resolution is
  the time one scrape takes (reported). The upstream must never receive a queued request:
  its count of generation requests (fake: its request log; sim: requests reaching its HTTP
  routes, and requests ever submitted to its engine) is compared before the trial and at the
  start of the next one (after the last trial: 0.5 s later).
- ``first_token``: streaming, the client leaves before the first token. Fake: the request
  asks for a 30 s time to first token and the client leaves once the fake has it. Sim: the
  prompt has ``--sim-prompt-tokens`` tokens, so chunked prefill (8192 tokens per step) needs
  three steps before the first token; the client leaves when the first step ends (the first
  moment ``wait_until`` can tell the request is in the engine). Each trial checks that the
  engine had sampled no token when the abort was seen.
- ``streaming``: the client leaves after reading the first event with non-empty content.
  Fake: 1000 tokens 20 ms apart; sim: 2000 tokens (``ignore_eos``).
- ``non_streaming``: the client leaves while the whole answer is still being made. Fake:
  30 s to the answer; sim: 2000 tokens, the client leaves once the engine emitted the first.

After each sim trial of the other phases the engine must have no work left (token production
stopped). Every prompt starts with a unique nonce so the simulator's prefix cache never
shortens a prefill. Before the trials each gateway serves a few complete requests (warm-up, no
cancellations), so its ``gateway_cancellations_total{phase}``, read from ``/metrics`` at the
end (the queued gateway's before its holder is closed), should match the trial counts.

Reported per upstream and phase: trials, detected (count and %), p50/p99/max delay in ms, the
share of trials under 50 ms (the target: 100%), and the gateway's own count.

Parameters: ``--trials`` (per phase and upstream, ``queued`` included, default 500),
``--bound-s`` (2 s), ``--upstreams`` (``fake,sim``), ``--phases``, ``--sim-speed`` (2.0:
simulated seconds per real second), ``--sim-prompt-tokens`` (24000), ``--max-misses``
(undetected trials before a phase stops early), ``--json FILE``.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import socket
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httptools
import orjson
from prometheus_client.parser import text_string_to_metric_families
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway.children import running
from loadtests.fake_upstream import FakeConfig, FakeLog, build_fake
from loadtests.loadgen.stats import percentile
from loadtests.serving import Served, serve_app
from loadtests.sim import tokenizer
from loadtests.sim.clock import RealClock
from loadtests.sim.generation import chat_prompt
from loadtests.sim.profile import load_profile
from loadtests.sim.replica import Replica, build_replica
from loadtests.sim.server import build_app

PHASES = ("queued", "first_token", "streaming", "non_streaming")
UPSTREAMS = ("fake", "sim")
TARGET_S = 0.050
CHAT = "/v1/chat/completions"
SIM_PROFILE = "qwen2.5-1.5b-h100"
SIM_MAX_TOKENS = 2000  # streaming / non_streaming: ~8 simulated s of decoding
ARRIVE_TIMEOUT_S = 10.0
SETTLE_S = 40.0  # after a miss: how long to wait for the upstream to finish or notice late
QUEUE_DEPTH = b"gateway_queue_depth{"
POOL = b'pool="main"'
FORWARD_GRACE_S = 0.5  # queued: how long after the last trial a forwarded request would show
FAKE_HOLD = {"ttft_s": 0.001, "tokens": 1_000_000, "itl_s": 0.5}  # ~5.8 days of stream

Body = dict[str, Any]
Headers = tuple[tuple[str, str], ...]  # extra request headers (a peer's API key)


@dataclass
class Trial:
    delay_s: float | None  # None: not seen within the bound
    in_phase: bool | None = None  # checked where the phase is not guaranteed by construction
    idle_after: bool | None = None  # sim: the engine had no work left after the trial
    # first_token: an SSE event had reached the client socket when it left (peeked, not read)
    saw_event: bool | None = None
    # queued: the upstream received the request (it must not), and how long the /metrics
    # scrape that saw the queue empty took (the resolution of the delay)
    forwarded: bool | None = None
    poll_s: float | None = None


@dataclass
class PhaseRun:
    upstream: str
    phase: str
    trials: list[Trial] = field(default_factory=list)
    stopped_early: bool = False
    seconds: float = 0.0
    holders: int = 0  # queued: long requests that held the slot, one after the other


class Target:
    """One upstream as the trials see it."""

    name: str
    url: str
    model: str

    def body(self, phase: str) -> Body:
        raise NotImplementedError

    def warm_up_bodies(self) -> list[Body]:
        raise NotImplementedError

    def start_trial(self, phase: str) -> None:
        raise NotImplementedError

    def wait_in_phase(self, phase: str) -> None:
        """Block until the request is where ``phase`` wants it (not for ``streaming``)."""
        raise NotImplementedError

    def wait_seen(self, phase: str, bound_s: float) -> Trial:
        """Block until the upstream saw the client leave (at most ``bound_s``)."""
        raise NotImplementedError

    def settle(self, trial: Trial) -> None:
        """After the trial: make sure nothing of it is left before the next one."""
        raise NotImplementedError

    # the queued phase

    def holder_body(self) -> Body:
        """The long request that holds the pool's only slot."""
        raise NotImplementedError

    def start_holder(self) -> None:
        """Called just before a holder is sent."""
        raise NotImplementedError

    def holder_left_s(self) -> float:
        """At least how many seconds the current holder still runs."""
        raise NotImplementedError

    def received(self) -> tuple[int, ...]:
        """The upstream's own counts of the generation requests it has received so far."""
        raise NotImplementedError


def _nonce() -> str:
    return f"[{uuid.uuid4().hex}]"


def _chat(content: str, stream: bool, **extra: Any) -> Body:
    return {
        "model": "bench",
        "messages": [{"role": "user", "content": content}],
        "stream": stream,
        **extra,
    }


class FakeTarget(Target):
    """``first_token_s``: how long the fake makes a first_token trial wait for its token;
    ``settle_s``: how long a missed trial waits for a late cancel (a peer that notices only
    when the first token comes notices ``first_token_s`` late)."""

    def __init__(
        self,
        served: Served,
        log: FakeLog,
        model: str,
        first_token_s: float = 30.0,
        settle_s: float = SETTLE_S,
    ) -> None:
        self.name = "fake"
        self.url = served.url
        self.model = model
        self.log = log
        self.first_token_s = first_token_s
        self.settle_s = settle_s
        self._before = 0
        self._holder_ends = 0.0

    def body(self, phase: str) -> Body:
        prompt = _nonce() + " Say something."
        if phase == "queued":
            return _chat(prompt, True, fake={"ttft_s": 0.001, "tokens": 5, "itl_s": 0.001})
        if phase == "first_token":
            return _chat(prompt, True, fake={"ttft_s": self.first_token_s})
        if phase == "streaming":
            return _chat(prompt, True, fake={"tokens": 1000, "itl_s": 0.02})
        return _chat(prompt, False, fake={"ttft_s": self.first_token_s})

    def warm_up_bodies(self) -> list[Body]:
        fast = {"ttft_s": 0.001, "tokens": 5, "itl_s": 0.001}
        return [_chat("hello", s, fake=fast) for s in (True, False) for _ in range(5)]

    def start_trial(self, phase: str) -> None:
        self.log.arrived.clear()
        self.log.left.clear()
        self._before = len(self.log.left_times)

    def wait_in_phase(self, phase: str) -> None:
        if not self.log.arrived.wait(ARRIVE_TIMEOUT_S):
            raise RuntimeError("the request never reached the fake upstream")

    def _cancel_time(self, deadline: float) -> float | None:
        while len(self.log.left_times) <= self._before:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            self.log.left.wait(remaining)
            self.log.left.clear()
        return self.log.left_times[self._before]

    def wait_seen(self, phase: str, bound_s: float) -> Trial:
        seen = self._cancel_time(time.monotonic() + bound_s)
        return Trial(seen)

    def settle(self, trial: Trial) -> None:
        if trial.delay_s is None:
            # A late cancel must not be taken for the next trial's.
            self._cancel_time(time.monotonic() + self.settle_s)

    def holder_body(self) -> Body:
        return _chat(_nonce() + " Hold the slot.", True, fake=FAKE_HOLD)

    def start_holder(self) -> None:
        self._holder_ends = time.monotonic() + FAKE_HOLD["ttft_s"]
        self._holder_ends += FAKE_HOLD["tokens"] * FAKE_HOLD["itl_s"]

    def holder_left_s(self) -> float:
        return self._holder_ends - time.monotonic()

    def received(self) -> tuple[int, ...]:
        return (len(self.log.bodies),)


class SimTarget(Target):
    def __init__(
        self,
        served: Served,
        replica: Replica,
        prompt_tokens: int,
        speed: float,
        requests: _CountRequests,
    ) -> None:
        self.name = "sim"
        self.url = served.url
        self.model = replica.served_model
        self.served = served
        self.replica = replica
        self.engine = replica.engine
        self.driver = replica.driver
        self.prompt_tokens = prompt_tokens
        self.speed = speed
        self.requests = requests
        self._filler = self._filler_for(prompt_tokens)
        self._aborts = 0
        self._tokens = 0
        self._holder_tokens = 0  # max_tokens of the current holder

    def _filler_for(self, tokens: int) -> str:
        # " w" is one pseudo-token; subtract what the template and the nonce add.
        overhead = tokenizer.count_tokens(chat_prompt([{"role": "user", "content": _nonce()}]))
        return " w" * max(1, tokens - overhead)

    def body(self, phase: str) -> Body:
        if phase == "queued":
            return _chat(_nonce() + " Say something.", True, max_tokens=16, ignore_eos=True)
        if phase == "first_token":
            return _chat(_nonce() + self._filler, True, max_tokens=16, ignore_eos=True)
        prompt = _nonce() + " Tell me a long story."
        return _chat(prompt, phase == "streaming", max_tokens=SIM_MAX_TOKENS, ignore_eos=True)

    def warm_up_bodies(self) -> list[Body]:
        return [
            _chat(_nonce() + " hello", s, max_tokens=4, ignore_eos=True)
            for s in (True, False)
            for _ in range(5)
        ]

    async def _wait(self, predicate: Callable[[], bool], timeout_s: float) -> bool:
        try:
            async with asyncio.timeout(timeout_s):
                await self.driver.wait_until(predicate)
        except TimeoutError:
            return False
        return True

    def start_trial(self, phase: str) -> None:
        # The engine is idle between trials (checked after each), so these are stable.
        self._aborts = self.engine.counters.aborts
        self._tokens = self.engine.counters.generation_tokens

    def wait_in_phase(self, phase: str) -> None:
        counters = self.engine.counters
        if phase == "first_token":
            predicate = self.engine.has_work
        else:
            tokens = self._tokens

            def predicate() -> bool:
                return counters.generation_tokens > tokens

        ok = self.served.call(lambda: self._wait(predicate, ARRIVE_TIMEOUT_S), ARRIVE_TIMEOUT_S + 5)
        if not ok:
            raise RuntimeError(f"the request never reached the simulator ({phase})")

    async def _seen(self, expected: int, bound_s: float) -> tuple[float, int, bool] | None:
        counters = self.engine.counters
        if not await self._wait(lambda: counters.aborts >= expected, bound_s):
            return None
        return time.monotonic(), counters.generation_tokens, not self.engine.has_work()

    def wait_seen(self, phase: str, bound_s: float) -> Trial:
        expected = self._aborts + 1
        seen = self.served.call(lambda: self._seen(expected, bound_s), bound_s + 5)
        if seen is None:
            return Trial(None)
        at, tokens, idle = seen
        in_phase = tokens == self._tokens if phase == "first_token" else None
        return Trial(at, in_phase=in_phase, idle_after=idle)

    async def _settle(self) -> bool:
        idle = not self.engine.has_work()
        if not idle:
            await self._wait(lambda: not self.engine.has_work(), SETTLE_S)
        return idle

    def settle(self, trial: Trial) -> None:
        idle = self.served.call(self._settle, SETTLE_S + 5)
        if trial.idle_after is None:
            trial.idle_after = idle

    def holder_body(self) -> Body:
        messages = [{"role": "user", "content": _nonce() + " Tell me everything."}]
        room = self.replica.profile.max_model_len - len(tokenizer.encode(chat_prompt(messages)))
        self._holder_tokens = room
        return {"model": "bench", "messages": messages, "stream": False,
                "max_tokens": room, "ignore_eos": True}  # fmt: skip

    def start_holder(self) -> None:
        # The engine is idle here (the previous holder finished), so every token it makes
        # from now on is the new holder's.
        self._tokens = self.engine.counters.generation_tokens

    def holder_left_s(self) -> float:
        made = self.engine.counters.generation_tokens - self._tokens
        step = self.replica.profile.step_time
        # Each decode step lasts at least base + one running sequence (simulated seconds).
        return (self._holder_tokens - made) * (step.base_s + step.per_running_seq_s) / self.speed

    async def _submitted(self) -> int:
        c, engine = self.engine.counters, self.engine
        return c.finished + c.aborts + engine.num_running + engine.num_waiting

    def received(self) -> tuple[int, ...]:
        return self.requests.count, self.served.call(self._submitted)


class _CountRequests:
    """ASGI middleware: counts the generation requests (``POST .../completions``) it passes."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.count = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            self.count += str(scope["path"]).endswith("completions")
        await self.app(scope, receive, send)


# ----------------------------------------------------------------------------- the client


def _send(host: str, port: int, body: Body, headers: Headers = ()) -> socket.socket:
    payload = orjson.dumps(body)
    sock = socket.create_connection((host, port), timeout=10)
    extra = "".join(f"{k}: {v}\r\n" for k, v in headers)
    head = (
        f"POST {CHAT} HTTP/1.1\r\nhost: {host}:{port}\r\ncontent-type: application/json\r\n"
        f"{extra}content-length: {len(payload)}\r\n\r\n"
    ).encode()
    sock.sendall(head + payload)
    return sock


class _Reader:
    """httptools callbacks: the decoded body so far."""

    def __init__(self) -> None:
        self.body = bytearray()
        self.complete = False

    def on_body(self, body: bytes) -> None:
        self.body += body

    def on_message_complete(self) -> None:
        self.complete = True


def _has_content(body: bytes) -> bool:
    for event in body.split(b"\n\n")[:-1]:  # complete events only
        if not event.startswith(b"data: {"):
            continue
        choices = orjson.loads(event[6:]).get("choices") or []
        for choice in choices:
            if (choice.get("delta") or {}).get("content") or choice.get("text"):
                return True
    return False


def _read_first_content(sock: socket.socket) -> None:
    reader = _Reader()
    parser = httptools.HttpResponseParser(reader)
    while not _has_content(bytes(reader.body)):
        data = sock.recv(65536)
        if not data or reader.complete:
            raise RuntimeError(f"stream ended before any content: {bytes(reader.body)[:300]!r}")
        parser.feed_data(data)
        if parser.get_status_code() not in (0, 200):
            raise RuntimeError(f"gateway answered {parser.get_status_code()}")


def _peek_event(sock: socket.socket) -> bool:
    """Whether an SSE event already waits in the socket's receive buffer (left unread)."""
    try:
        data = sock.recv(65536, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except BlockingIOError:
        return False
    return b"data: " in data


def one_trial(
    gateway: tuple[str, int], target: Target, phase: str, bound_s: float, headers: Headers = ()
) -> Trial:
    target.start_trial(phase)
    sock = _send(*gateway, target.body(phase), headers)
    saw_event: bool | None = None
    try:
        if phase == "streaming":
            _read_first_content(sock)
        else:
            target.wait_in_phase(phase)
            if phase == "first_token":
                saw_event = _peek_event(sock)
        t0 = time.monotonic()
    finally:
        sock.close()
    trial = target.wait_seen(phase, bound_s)
    trial.saw_event = saw_event
    if trial.delay_s is not None:
        trial.delay_s -= t0
    target.settle(trial)
    return trial


class _Holder:
    """The long request that holds the pool's only slot; a thread reads (and drops) its answer."""

    def __init__(self, gateway: tuple[str, int], body: Body) -> None:
        self.sock = _send(*gateway, body)
        self.sock.settimeout(None)
        self.ended = threading.Event()
        self.status = 0
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def on_message_complete(self) -> None:
        self.ended.set()

    def _read(self) -> None:
        parser = httptools.HttpResponseParser(self)
        try:
            while not self.ended.is_set():
                data = self.sock.recv(65536)
                if not data:
                    break
                parser.feed_data(data)
                self.status = parser.get_status_code()
        except (OSError, httptools.HttpParserError):
            pass
        finally:
            self.ended.set()

    def close(self) -> None:
        with suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the reader
        self.sock.close()
        self._thread.join(5)


class _QueueDepth:
    """``gateway_queue_depth{pool="main"}``, summed, read from ``/metrics`` (kept-alive)."""

    def __init__(self, gateway: tuple[str, int]) -> None:
        self._conn = http.client.HTTPConnection(*gateway, timeout=5)

    def read(self) -> tuple[int, float]:
        """The depth and how long the scrape took; reconnects once if the server closed."""
        for attempt in (0, 1):
            sent = time.monotonic()
            try:
                self._conn.request("GET", "/metrics")
                response = self._conn.getresponse()
                body = response.read()
            except (http.client.HTTPException, OSError):
                self._conn.close()
                if attempt:
                    raise
                continue
            took = time.monotonic() - sent
            if response.status != 200:
                raise RuntimeError(f"/metrics answered {response.status}")
            depth = sum(
                float(line.rsplit(b" ", 1)[1])
                for line in body.splitlines()
                if line.startswith(QUEUE_DEPTH) and POOL in line
            )
            return round(depth), took
        raise AssertionError("unreachable")

    def wait_for(self, depth: int, bound_s: float) -> tuple[float, float] | None:
        """Scrape back to back until the depth is ``depth``: (when the answer came, its
        scrape's duration), or ``None`` after ``bound_s``."""
        deadline = time.monotonic() + bound_s
        while True:
            seen, took = self.read()
            now = time.monotonic()
            if seen == depth:
                return now, took
            if now > deadline:
                return None

    def close(self) -> None:
        self._conn.close()


def _one_queued(
    gateway: tuple[str, int], target: Target, queue: _QueueDepth, bound_s: float
) -> tuple[Trial, tuple[int, ...]]:
    """One queued trial and the upstream's counts before it (for the forwarded check)."""
    before = target.received()
    sock = _send(*gateway, target.body("queued"))
    try:
        if queue.wait_for(1, ARRIVE_TIMEOUT_S) is None:
            raise RuntimeError("the request never showed in the gateway's queue")
        t0 = time.monotonic()
    finally:
        sock.close()
    seen = queue.wait_for(0, bound_s)
    if seen is None:
        # Not gone within the bound: it must be gone before the next trial.
        if queue.wait_for(0, SETTLE_S) is None:
            raise RuntimeError("a request whose client left stays in the gateway's queue")
        return Trial(None), before
    return Trial(seen[0] - t0, poll_s=seen[1]), before


def complete(gateway: tuple[str, int], body: Body, headers: Headers = ()) -> None:
    """One request read to its end (warm-up)."""
    sock = _send(*gateway, body, headers)
    try:
        reader = _Reader()
        parser = httptools.HttpResponseParser(reader)
        while not reader.complete:
            data = sock.recv(65536)
            if not data:
                raise RuntimeError("warm-up: connection closed early")
            parser.feed_data(data)
        if parser.get_status_code() != 200:
            raise RuntimeError(f"warm-up: {parser.get_status_code()} {bytes(reader.body)[:300]!r}")
    finally:
        sock.close()


# ----------------------------------------------------------------------------- processes


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def _target(name: str, args: argparse.Namespace) -> Iterator[Target]:
    if name == "fake":
        log = FakeLog()
        config = FakeConfig()
        with serve_app(build_fake(config, log)) as served:
            yield FakeTarget(served, log, config.model)
        return
    profile = load_profile(SIM_PROFILE)
    replica = build_replica(
        profile, kind="vllm", served_model=profile.model, clock=RealClock(args.sim_speed)
    )
    app = _CountRequests(build_app(replica))
    with serve_app(app) as served:
        yield SimTarget(served, replica, args.sim_prompt_tokens, args.sim_speed, app)


@contextmanager
def gateway_process(
    target: Target, tmp: Path, *, queued: bool = False
) -> Iterator[tuple[str, int]]:
    """The gateway in front of ``target``; ``queued``: the pool's limit is 1, and timeouts
    long enough for the holder (a whole answer of ~68 s, a stream of days)."""
    port = _free_port()
    kind = "queued" if queued else "main"
    policy = tmp / f"policy-{target.name}-{kind}.yaml"
    pools = "pools:\n  main:\n    timeouts: {first_token_s: 86400, idle_s: 86400, total_s: 86400}\n"
    policy.write_text(
        "backends:\n"
        f"  - {{name: up-0, url: {json.dumps(target.url)}, engine: vllm,"
        f" model: {json.dumps(target.model)}, pool: main,"
        f" max_inflight: {1 if queued else 1000}}}\n"
        "models:\n  bench: {pool: main}\n" + (pools if queued else "")
    )
    argv = [sys.executable, "-m", "gateway", "serve", "--policy", str(policy),
            "--port", str(port), "--log-level", "warning"]  # fmt: skip
    log_path = tmp / f"gateway-{target.name}-{kind}.log"
    try:
        with running(argv, [f"http://127.0.0.1:{port}/readyz"], log_path):
            yield "127.0.0.1", port
    except Exception:
        if log_path.exists():
            sys.stderr.write(f"--- {log_path} ---\n{log_path.read_text()[-4000:]}\n")
        raise


def _cancellations(gateway: tuple[str, int]) -> dict[str, int]:
    host, port = gateway
    with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=5) as resp:
        text = resp.read().decode()
    counts: dict[str, int] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "gateway_cancellations_total":
                counts[sample.labels["phase"]] = int(sample.value)
    return counts


# ----------------------------------------------------------------------------- the run


def run_phase(
    gateway: tuple[str, int],
    target: Target,
    phase: str,
    args: argparse.Namespace,
    headers: Headers = (),
) -> PhaseRun:
    """``args.trials`` sequential trials (``args.bound_s``, ``args.max_misses``)."""
    run = PhaseRun(target.name, phase)
    began = time.monotonic()
    misses = 0
    for _ in range(args.trials):
        trial = one_trial(gateway, target, phase, args.bound_s, headers)
        run.trials.append(trial)
        misses += trial.delay_s is None
        if misses >= args.max_misses:
            run.stopped_early = True
            break
    run.seconds = time.monotonic() - began
    return run


def _start_holder(
    gateway: tuple[str, int], target: Target, queue: _QueueDepth, old: _Holder | None
) -> _Holder:
    """Let ``old`` finish (closing it would count a cancellation), then send a new holder and
    wait until the upstream has it and the gateway's queue is empty (it holds the slot)."""
    if old is not None:
        if not old.ended.wait(max(0.0, target.holder_left_s()) + SETTLE_S):
            raise RuntimeError("the holder did not finish")
        old.close()
        if old.status != 200:
            raise RuntimeError(f"the holder ended with status {old.status}")
    before = target.received()
    target.start_holder()
    holder = _Holder(gateway, target.holder_body())
    deadline = time.monotonic() + ARRIVE_TIMEOUT_S
    while not all(n > b for n, b in zip(target.received(), before, strict=True)):
        if holder.ended.is_set() or time.monotonic() > deadline:
            holder.close()
            raise RuntimeError(f"the holder never reached the upstream (status {holder.status})")
        time.sleep(0.005)
    if queue.wait_for(0, ARRIVE_TIMEOUT_S) is None:
        holder.close()
        raise RuntimeError("the holder did not get the pool's slot")
    return holder


def run_queued(
    gateway: tuple[str, int], target: Target, args: argparse.Namespace
) -> tuple[PhaseRun, dict[str, int]]:
    """The queued phase on a gateway whose pool takes one request at a time; also the
    gateway's cancellation counts, read while the holder still holds the slot."""
    run = PhaseRun(target.name, "queued")
    began = time.monotonic()
    margin = ARRIVE_TIMEOUT_S + args.bound_s + 1.0  # longer than any one trial
    queue = _QueueDepth(gateway)
    holder: _Holder | None = None
    pending: tuple[Trial, tuple[int, ...]] | None = None
    misses = 0
    try:
        for _ in range(args.trials):
            if pending is not None:  # the previous trial: did its request reach the upstream?
                pending[0].forwarded = target.received() != pending[1]
            if holder is None or holder.ended.is_set() or target.holder_left_s() < margin:
                holder = _start_holder(gateway, target, queue, holder)
                run.holders += 1
            pending = _one_queued(gateway, target, queue, args.bound_s)
            if holder.ended.is_set():
                raise RuntimeError(f"the holder ended during a trial (status {holder.status})")
            run.trials.append(pending[0])
            misses += pending[0].delay_s is None
            if misses >= args.max_misses:
                run.stopped_early = True
                break
        if pending is not None:
            time.sleep(FORWARD_GRACE_S)
            pending[0].forwarded = target.received() != pending[1]
        run.seconds = time.monotonic() - began
        counts = _cancellations(gateway)
    finally:
        queue.close()
        if holder is not None:
            holder.close()
    return run, counts


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value * 1000, 2)


def phase_row(run: PhaseRun, gateway_counts: dict[str, int]) -> dict[str, Any]:
    n = len(run.trials)
    delays = [t.delay_s for t in run.trials if t.delay_s is not None]
    under = sum(d < TARGET_S for d in delays)
    checked = [t.in_phase for t in run.trials if t.in_phase is not None]
    idle = [t.idle_after for t in run.trials if t.idle_after is not None]
    saw = [t.saw_event for t in run.trials if t.saw_event is not None]
    forwarded = [t.forwarded for t in run.trials if t.forwarded is not None]
    polls = [t.poll_s for t in run.trials if t.poll_s is not None]
    return {
        "upstream": run.upstream,
        "phase": run.phase,
        "trials": n,
        "detected": len(delays),
        "detected_pct": round(100 * len(delays) / n, 1) if n else 0.0,
        "p50_ms": _ms(percentile(delays, 50)),
        "p99_ms": _ms(percentile(delays, 99)),
        "max_ms": _ms(max(delays) if delays else None),
        "under_50ms_pct": round(100 * under / n, 1) if n else 0.0,
        "gateway_count": gateway_counts.get(run.phase, 0),
        "in_phase_checked": len(checked),
        "in_phase_ok": sum(checked),
        "idle_checked": len(idle),
        "idle_ok": sum(idle),
        "saw_event_checked": len(saw),
        "saw_event": sum(saw),
        "forwarded_checked": len(forwarded),
        "forwarded": sum(forwarded),
        "poll_p50_ms": _ms(percentile(polls, 50)),
        "poll_max_ms": _ms(max(polls) if polls else None),
        "holders": run.holders,
        "stopped_early": run.stopped_early,
        "seconds": round(run.seconds, 1),
        "delays_ms": [round(d * 1000, 3) for d in delays],
    }


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| upstream | phase | trials | detected | p50 ms | p99 ms | max ms | < 50 ms "
        "| gateway_cancellations_total |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['upstream']} | {r['phase']} | {r['trials']} "
            f"| {r['detected']} ({r['detected_pct']:.1f}%) | {_fmt(r['p50_ms'])} "
            f"| {_fmt(r['p99_ms'])} | {_fmt(r['max_ms'])} | {r['under_50ms_pct']:.1f}% "
            f"| {r['gateway_count']} |"
        )
    return "\n".join(lines)


Counts = dict[str, dict[str, dict[str, int]]]  # upstream -> gateway (main | queued) -> phase


def _gateway_of(phase: str) -> str:
    return "queued" if phase == "queued" else "main"


def _notes(rows: list[dict[str, Any]], counts: Counts, args: argparse.Namespace) -> list[str]:
    notes = []
    for upstream, gateways in counts.items():
        for kind, by_phase in gateways.items():
            trials = {
                r["phase"]: r["trials"]
                for r in rows
                if r["upstream"] == upstream and _gateway_of(r["phase"]) == kind
            }
            shown = ", ".join(f"{p}={by_phase.get(p, 0)}" for p in PHASES)
            # Phases not run on this gateway must count none.
            ok = all(by_phase.get(p, 0) == trials.get(p, 0) for p in PHASES)
            label = "queued gateway (pool limit 1)" if kind == "queued" else "gateway"
            notes.append(
                f"{upstream} {label}: gateway_cancellations_total {shown}; "
                f"trials {', '.join(f'{p}={n}' for p, n in trials.items())} "
                f"({'match' if ok else 'DIFFER'})."
            )
    for r in rows:
        if r["phase"] == "queued":
            where = (
                "its HTTP routes and its engine" if r["upstream"] == "sim" else "its request log"
            )
            notes.append(
                f"{r['upstream']} queued: the slot was held by {r['holders']} long request(s) "
                f"in turn; the upstream received {r['forwarded']}/{r['forwarded_checked']} of "
                f"the queued requests ({where})."
            )
            notes.append(
                f"{r['upstream']} queued: each delay ends when the first /metrics answer "
                "showing gateway_queue_depth 0 arrived (an upper bound); that scrape took p50 "
                f"{_fmt(r['poll_p50_ms'])} ms, max {_fmt(r['poll_max_ms'])} ms."
            )
        if r["in_phase_checked"]:
            notes.append(
                f"{r['upstream']} {r['phase']}: {r['in_phase_ok']}/{r['in_phase_checked']} "
                "aborts came before the engine sampled any token."
            )
        if r["saw_event"]:
            why = (
                " (the simulator sends its role chunk, empty content, before the first token)"
                if r["upstream"] == "sim"
                else ""
            )
            notes.append(
                f"{r['upstream']} {r['phase']}: in {r['saw_event']}/{r['saw_event_checked']} "
                f"trials an SSE event had already reached the client when it left{why}; the "
                "gateway counts a departure as first_token until an event carries output."
            )
        if r["idle_checked"]:
            notes.append(
                f"{r['upstream']} {r['phase']}: engine idle (no tokens produced) after "
                f"{r['idle_ok']}/{r['idle_checked']} trials."
            )
        if r["stopped_early"]:
            notes.append(
                f"{r['upstream']} {r['phase']}: stopped after {args.max_misses} undetected trials."
            )
    return notes


def _progress(run: PhaseRun) -> None:
    sys.stderr.write(
        f"[{run.upstream}] {run.phase}: {len(run.trials)} trials in {run.seconds:.1f} s\n"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--trials", type=int, default=500, help="per phase and upstream")
    parser.add_argument("--bound-s", type=float, default=2.0, help="wait for the upstream")
    parser.add_argument("--upstreams", default=",".join(UPSTREAMS))
    parser.add_argument("--phases", default=",".join(PHASES))
    parser.add_argument("--sim-speed", type=float, default=2.0)
    parser.add_argument("--sim-prompt-tokens", type=int, default=24000)
    parser.add_argument("--max-misses", type=int, default=10)
    parser.add_argument("--json", help="also write the results to this JSON file")
    args = parser.parse_args(argv)
    upstreams = [u for u in args.upstreams.split(",") if u]
    phases = [p for p in args.phases.split(",") if p]
    if bad := [u for u in upstreams if u not in UPSTREAMS] + [p for p in phases if p not in PHASES]:
        parser.error(f"unknown upstream or phase: {', '.join(bad)}")

    rows: list[dict[str, Any]] = []
    counts: Counts = {}
    began = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        for name in upstreams:
            counts[name] = {}
            with _target(name, args) as target:
                runs: list[PhaseRun] = []
                if "queued" in phases:
                    with gateway_process(target, Path(tmp), queued=True) as gateway:
                        for body in target.warm_up_bodies():
                            complete(gateway, body)
                        run, counts[name]["queued"] = run_queued(gateway, target, args)
                    _progress(run)
                    runs.append(run)
                others = [p for p in phases if p != "queued"]
                if others:
                    with gateway_process(target, Path(tmp)) as gateway:
                        for body in target.warm_up_bodies():
                            complete(gateway, body)
                        for phase in others:
                            runs.append(run_phase(gateway, target, phase, args))
                            _progress(runs[-1])
                        counts[name]["main"] = _cancellations(gateway)
                rows.extend(phase_row(run, counts[name][_gateway_of(run.phase)]) for run in runs)

    title = (
        f"Cancellation propagation through the gateway: client socket closed -> upstream sees "
        f"the departure (queued: the gateway's queue drops the request) ({args.trials} "
        f"sequential trials per row, bound {args.bound_s:g} s, target 100% under "
        f"{TARGET_S * 1000:.0f} ms)"
    )
    notes = _notes(rows, counts, args)
    print(title)
    print()
    print(_table(rows))
    print()
    for note in notes:
        print(f"- {note}")
    print(f"\ntotal {time.monotonic() - began:.0f} s")
    if args.json:
        parameters = {k: v for k, v in vars(args).items() if k != "json"}
        result = {
            "parameters": parameters,
            "rows": rows,
            "gateway_cancellations": counts,
            "notes": notes,
        }
        Path(args.json).write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
