"""Continuous-batching engine: a synchronously steppable scheduler state machine.

Algorithm (after vLLM's V1 scheduler with chunked prefill, FCFS policy): every step has a
token budget ``max_num_batched_tokens``. Running sequences are served first, in order: a
decoding sequence needs one token (the last sampled one), a sequence still in prefill takes a
chunk of its remaining prompt up to the budget. When a running sequence needs a KV block and
none is free, the last running sequence is preempted (recompute: its blocks are freed and it
goes back to the head of the waiting queue). Then waiting sequences are admitted in FCFS
order while the budget lasts and fewer than ``max_num_seqs`` run; a newly admitted sequence
first takes the longest cached prefix of its prompt's full blocks, which skips their prefill
(at least one token is always computed, as in vLLM). The head of the queue is never
overtaken. A sequence whose computed tokens reach its total tokens samples one token (with
speculative decoding ``1 + accepted`` tokens). The step lasts ``Profile.step_time`` of the
batch. The engine has no clock: ``step()`` returns the duration and the caller advances time.

What the engine reports as waiting (``reported_waiting``, vLLM's
``vllm:num_requests_waiting``) is vLLM V1's: the scheduler's statistics are taken once per
step, after that step's scheduling, so they count the requests the step could not admit (no
slot, no token budget, no KV room, preempted); a request that arrives while a step runs
reaches the scheduler after it and is not counted until a step leaves it behind.
``num_waiting`` is the live queue (arrivals not yet scheduled included).

Parameters: a ``Profile`` and a ``seed`` for the speculative acceptance draws and the
step-time noise (``Profile.step_time_cv``).
"""

from __future__ import annotations

import math
import random
from collections import deque
from dataclasses import dataclass, field

from loadtests.sim.kv import BlockManager, block_hashes
from loadtests.sim.profile import Profile


@dataclass(frozen=True)
class EngineRequest:
    """What the engine needs to know about a request."""

    request_id: str
    prompt_token_ids: list[int]
    max_tokens: int
    stop_at: int | None = None  # natural (EOS) length; None when ignore_eos


@dataclass(eq=False)
class Sequence:
    req: EngineRequest
    hashes: list[int]
    num_output: int = 0
    num_computed: int = 0
    blocks: list[int] = field(default_factory=list)
    registered: int = 0
    decoding: bool = False
    admitted: bool = False
    cached_tokens: int = 0

    @property
    def prompt_len(self) -> int:
        return len(self.req.prompt_token_ids)

    @property
    def num_tokens(self) -> int:
        return self.prompt_len + self.num_output

    @property
    def target(self) -> int:
        stop = self.req.stop_at
        return self.req.max_tokens if stop is None else min(stop, self.req.max_tokens)

    @property
    def finish_reason(self) -> str:
        stop = self.req.stop_at
        return "stop" if stop is not None and stop <= self.req.max_tokens else "length"


@dataclass(frozen=True)
class StepResult:
    """One engine step: how long it takes and what it produced."""

    duration_s: float
    emitted: dict[str, int]
    finished: dict[str, str]
    admitted: dict[str, int]  # request_id -> cached prompt tokens, on first admission
    prefill_tokens: int
    num_scheduled: int


@dataclass
class EngineCounters:
    prefix_queries: int = 0
    prefix_hits: int = 0
    preemptions: int = 0
    aborts: int = 0
    finished: int = 0
    prompt_tokens: int = 0
    generation_tokens: int = 0
    spec_drafts: int = 0
    spec_draft_tokens: int = 0
    spec_accepted_tokens: int = 0


class Engine:
    """Scheduler, KV cache and token accounting of one replica."""

    def __init__(self, profile: Profile, *, seed: int = 0) -> None:
        self.profile = profile
        self.kv = BlockManager(profile.num_kv_blocks, profile.block_size)
        self.counters = EngineCounters()
        self._rng = random.Random(seed)
        self._waiting: deque[Sequence] = deque()
        self._running: list[Sequence] = []
        self._seqs: dict[str, Sequence] = {}
        self._left_behind = 0  # waiting after the last step's scheduling

    @property
    def num_running(self) -> int:
        return len(self._running)

    @property
    def num_waiting(self) -> int:
        return len(self._waiting)

    @property
    def reported_waiting(self) -> int:
        """Requests the last step's scheduling left waiting (those aborted since excepted):
        what vLLM's per-step statistics report (module docstring)."""
        return min(self._left_behind, len(self._waiting))

    def batch_max_tokens(self) -> int:
        """Sum of the maximum total tokens of the running batch (TGI's batch gauge)."""
        return sum(s.prompt_len + s.req.max_tokens for s in self._running)

    def has_work(self) -> bool:
        return bool(self._running or self._waiting)

    def __contains__(self, request_id: str) -> bool:
        return request_id in self._seqs

    def check(self, req: EngineRequest) -> None:
        """Raise ``ValueError`` if the engine would refuse the request (nothing changes)."""
        total = len(req.prompt_token_ids) + req.max_tokens
        if not req.prompt_token_ids or req.max_tokens < 1:
            raise ValueError("need at least one prompt token and max_tokens >= 1")
        if total > self.profile.max_model_len:
            raise ValueError(f"{total} tokens exceed max_model_len {self.profile.max_model_len}")
        if self.kv.blocks_needed(total) > self.kv.num_blocks:
            raise ValueError("request does not fit in the KV cache")

    def add_request(self, req: EngineRequest) -> None:
        self.check(req)
        if req.request_id in self._seqs:
            raise ValueError(f"duplicate request id {req.request_id}")
        hashes = block_hashes(req.prompt_token_ids, self.profile.block_size)
        seq = Sequence(req=req, hashes=hashes)
        self._seqs[req.request_id] = seq
        self._waiting.append(seq)

    def abort(self, request_id: str) -> bool:
        """Drop a request at once, freeing its blocks. False if it is unknown or done."""
        seq = self._seqs.pop(request_id, None)
        if seq is None:
            return False
        if seq in self._running:
            self._running.remove(seq)
            self.kv.free(seq.blocks)
            seq.blocks = []
        else:
            self._waiting.remove(seq)
        self.counters.aborts += 1
        return True

    def step(self) -> StepResult:
        budget = self.profile.max_num_batched_tokens
        scheduled: list[tuple[Sequence, int]] = []
        budget = self._schedule_running(budget, scheduled)
        admitted = self._schedule_waiting(budget, scheduled)
        self._left_behind = len(self._waiting)
        return self._execute(scheduled, admitted)

    def _schedule_running(self, budget: int, out: list[tuple[Sequence, int]]) -> int:
        i = 0
        while i < len(self._running) and budget > 0:
            seq = self._running[i]
            n = min(seq.num_tokens - seq.num_computed, budget)
            if not self._grow(seq, n):
                break  # seq itself was preempted; it was the last one
            out.append((seq, n))
            budget -= n
            i += 1
        return budget

    def _grow(self, seq: Sequence, n: int) -> bool:
        need = self.kv.blocks_needed(seq.num_computed + n) - len(seq.blocks)
        while not self.kv.can_allocate(need, ()):
            victim = self._running[-1]
            self._preempt(victim)
            if victim is seq:
                return False
        seq.blocks.extend(self.kv.allocate(need))
        return True

    def _preempt(self, seq: Sequence) -> None:
        self._running.pop()
        self.kv.free(seq.blocks)
        seq.blocks = []
        seq.num_computed = 0
        seq.registered = 0
        seq.decoding = False
        self._waiting.appendleft(seq)
        self.counters.preemptions += 1

    def _schedule_waiting(self, budget: int, out: list[tuple[Sequence, int]]) -> dict[str, int]:
        admitted: dict[str, int] = {}
        max_seqs = self.profile.max_num_seqs
        while self._waiting and budget > 0 and len(self._running) < max_seqs:
            seq = self._waiting[0]
            n = self._admit(seq, budget)
            if n == 0:
                break
            self._waiting.popleft()
            self._running.append(seq)
            out.append((seq, n))
            budget -= n
            if not seq.admitted:
                seq.admitted = True
                seq.cached_tokens = seq.num_computed
                admitted[seq.req.request_id] = seq.num_computed
        return admitted

    def _admit(self, seq: Sequence, budget: int) -> int:
        """Take prefix-cache hits and blocks for the first chunk; 0 if the KV cache is full."""
        bs = self.profile.block_size
        max_hit = (seq.num_tokens - 1) // bs
        hits = self.kv.match_prefix(seq.hashes[:max_hit])
        cached = len(hits) * bs
        n = min(seq.num_tokens - cached, budget)
        need = self.kv.blocks_needed(cached + n) - len(hits)
        if not self.kv.can_allocate(need, hits):
            return 0
        self.kv.take_cached(hits)
        seq.blocks = [*hits, *self.kv.allocate(need)]
        seq.num_computed = cached
        seq.registered = len(hits)
        self.counters.prefix_queries += seq.num_tokens
        self.counters.prefix_hits += cached
        return n

    def _execute(
        self, scheduled: list[tuple[Sequence, int]], admitted: dict[str, int]
    ) -> StepResult:
        emitted: dict[str, int] = {}
        finished: dict[str, str] = {}
        prefill = context = decoding = attention = cached_chunks = 0
        for seq, n in scheduled:
            if seq.decoding:
                decoding += 1
            else:
                prefill += n
                # Each of the n new prompt tokens attends to what precedes it.
                attention += n * seq.num_computed + n * (n + 1) // 2
                cached_chunks += seq.num_computed > 0
            seq.num_computed += n
            context += seq.num_computed
            self._register_blocks(seq)
            if seq.num_computed == seq.num_tokens:
                emitted[seq.req.request_id] = self._sample(seq)
                if seq.num_output >= seq.target:
                    finished[seq.req.request_id] = self._finish(seq)
        if finished:
            self._running = [s for s in self._running if s.req.request_id not in finished]
        step = self.profile.step_time
        duration = step.seconds(prefill, len(scheduled), context, attention, cached_chunks)
        duration = self._with_speculation(duration, decoding) * self._noise()
        return StepResult(duration, emitted, finished, admitted, prefill, len(scheduled))

    def _register_blocks(self, seq: Sequence) -> None:
        full = min(
            min(seq.num_computed, seq.prompt_len) // self.profile.block_size, len(seq.hashes)
        )
        for j in range(seq.registered, full):
            self.kv.register(seq.blocks[j], seq.hashes[j])
        seq.registered = max(seq.registered, full)

    def _sample(self, seq: Sequence) -> int:
        spec = self.profile.speculative
        k = 1
        if spec is not None and seq.decoding:
            accepted = 0
            while accepted < spec.num_draft_tokens and self._rng.random() < spec.acceptance_rate:
                accepted += 1
            self.counters.spec_drafts += 1
            self.counters.spec_draft_tokens += spec.num_draft_tokens
            self.counters.spec_accepted_tokens += accepted
            k = 1 + accepted
        k = min(k, seq.target - seq.num_output)
        if not seq.decoding and seq.num_output == 0:
            self.counters.prompt_tokens += seq.prompt_len
        seq.decoding = True
        seq.num_output += k
        self.counters.generation_tokens += k
        return k

    def _finish(self, seq: Sequence) -> str:
        self.kv.free(seq.blocks)
        seq.blocks = []
        del self._seqs[seq.req.request_id]
        self.counters.finished += 1
        return seq.finish_reason

    def _with_speculation(self, t: float, decoding: int) -> float:
        spec = self.profile.speculative
        if spec is not None and decoding:
            t += spec.base_overhead_s + spec.per_seq_overhead_s * decoding
        return t

    def _noise(self) -> float:
        cv = self.profile.step_time_cv
        if cv == 0:
            return 1.0  # no draw: profiles without noise keep their speculative draws
        sigma = math.sqrt(math.log1p(cv * cv))
        return self._rng.lognormvariate(-sigma * sigma / 2, sigma)
