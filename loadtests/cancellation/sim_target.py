"""The simulator as a cancellation upstream: abort counters watched on its own loop.

``SimTarget`` runs the replica's engine in this process; a coroutine run on the simulator's
loop waits (``EngineDriver.wait_until``, event-driven) until the engine's abort counter
reaches the expected value. ``RequestCounter`` (ASGI middleware) counts the generation
requests that reach the simulator's HTTP routes, for the queued phase's check that none was
forwarded. Parameters: the prompt size of a first_token trial, the simulator's speed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from starlette.types import ASGIApp, Receive, Scope, Send

from loadtests.cancellation.trial import ARRIVE_TIMEOUT_S, SETTLE_S, Body, Trial
from loadtests.cancellation.upstreams import Target, chat_body, nonce
from loadtests.kit.serving import Served
from loadtests.sim import tokenizer
from loadtests.sim.generation import chat_prompt
from loadtests.sim.replica import Replica

SIM_MAX_TOKENS = 2000  # streaming / non_streaming: ~8 simulated s of decoding


class SimTarget(Target):
    def __init__(
        self,
        served: Served,
        replica: Replica,
        prompt_tokens: int,
        speed: float,
        requests: RequestCounter,
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
        overhead = tokenizer.count_tokens(chat_prompt([{"role": "user", "content": nonce()}]))
        return " w" * max(1, tokens - overhead)

    def body(self, phase: str) -> Body:
        if phase == "queued":
            return chat_body(nonce() + " Say something.", True, max_tokens=16, ignore_eos=True)
        if phase == "first_token":
            return chat_body(nonce() + self._filler, True, max_tokens=16, ignore_eos=True)
        prompt = nonce() + " Tell me a long story."
        return chat_body(prompt, phase == "streaming", max_tokens=SIM_MAX_TOKENS, ignore_eos=True)

    def warm_up_bodies(self) -> list[Body]:
        return [
            chat_body(nonce() + " hello", s, max_tokens=4, ignore_eos=True)
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
        messages = [{"role": "user", "content": nonce() + " Tell me everything."}]
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


class RequestCounter:
    """ASGI middleware: counts the generation requests (``POST .../completions``) it passes."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.count = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            self.count += str(scope["path"]).endswith("completions")
        await self.app(scope, receive, send)
