from __future__ import annotations

import pytest

from loadtests.sim.engine import Engine
from loadtests.sim.profile import Speculative, StepTime
from loadtests.sim.virtual import VirtualRunner

from .conftest import make_profile, req, tokens

STEP = StepTime(base_s=0.01, per_prefill_token_s=0.001, per_running_seq_s=0.0,
                per_context_token_s=0.0)  # fmt: skip


@pytest.mark.parametrize("prompt_len", [8, 100, 400, 1000, 2000])
def test_ttft_grows_with_uncached_prompt_tokens(prompt_len: int) -> None:
    runner = VirtualRunner(Engine(make_profile(step_time=STEP)))
    trace = runner.run([(0.0, req("a", tokens(0, prompt_len), 1))])["a"]
    chunks = -(-prompt_len // 512)  # chunked prefill: one step per 512-token chunk
    assert trace.first_token == pytest.approx(chunks * 0.01 + prompt_len * 0.001)


@pytest.mark.parametrize("shared_blocks", [0, 1, 3, 6])
def test_prefix_hit_saves_exactly_its_blocks_prefill(shared_blocks: int) -> None:
    shared = tokens(0, 16 * shared_blocks)
    first = [*shared, *tokens(10_000, 200)]
    second = [*shared, *tokens(20_000, 200)]
    engine = Engine(make_profile(step_time=STEP))
    runner = VirtualRunner(engine)
    runner.run([(0.0, req("a", first, 2))])
    t0 = runner.now
    trace = runner.run([(t0, req("b", second, 1))])["b"]
    assert trace.cached_tokens == 16 * shared_blocks
    assert trace.first_token is not None
    uncached = len(second) - 16 * shared_blocks
    assert trace.first_token - t0 == pytest.approx(0.01 + 0.001 * uncached)
    assert engine.counters.prefix_hits == 16 * shared_blocks


def test_fully_cached_prompt_still_computes_one_token() -> None:
    engine = Engine(make_profile(step_time=STEP))
    runner = VirtualRunner(engine)
    prompt = tokens(0, 64)
    runner.run([(0.0, req("a", prompt, 1))])
    trace = runner.run([(runner.now, req("b", prompt, 1))])["b"]
    assert trace.cached_tokens == 48


def test_abort_frees_blocks_and_stops_tokens() -> None:
    engine = Engine(make_profile())
    runner = VirtualRunner(engine)
    runner.submit(req("a", tokens(0, 100), 50))
    runner.submit(req("w", tokens(500, 10), 50))
    for _ in range(3):
        runner.step()
    assert engine.kv.num_free < engine.kv.num_blocks
    assert engine.abort("a")
    assert engine.abort("w")
    assert not engine.abort("a")
    assert engine.kv.num_free == engine.kv.num_blocks
    assert engine.num_running == 0
    assert engine.counters.aborts == 2
    assert not engine.has_work()
    assert all("a" not in s.emitted for s in (engine.step(),))


def test_abort_of_waiting_request_leaves_others_running() -> None:
    engine = Engine(make_profile(max_num_seqs=1))
    runner = VirtualRunner(engine)
    runner.submit(req("a", tokens(0, 10), 5))
    runner.submit(req("b", tokens(100, 10), 5))
    runner.step()
    assert (engine.num_running, engine.num_waiting) == (1, 1)
    engine.abort("b")
    runner.run_until_idle()
    assert runner.traces["a"].tokens == 5
    assert runner.traces["b"].tokens == 0


def test_kv_pressure_preempts_and_everything_still_finishes() -> None:
    engine = Engine(make_profile(num_kv_blocks=20, max_num_batched_tokens=256))
    runner = VirtualRunner(engine)
    traces = runner.run([(0.0, req(f"r{i}", tokens(1000 * i, 40), 100)) for i in range(4)])
    assert engine.counters.preemptions > 0
    assert all(t.tokens == 100 and t.finish_reason == "length" for t in traces.values())
    assert engine.kv.num_free == engine.kv.num_blocks


def test_lru_keeps_recent_prefix_and_evicts_old_one() -> None:
    engine = Engine(make_profile(num_kv_blocks=12))
    runner = VirtualRunner(engine)
    old, recent = tokens(0, 64), tokens(1000, 64)
    for rid, prompt in (("old", old), ("recent", recent)):
        runner.run([(runner.now, req(rid, prompt, 1))])
    runner.run([(runner.now, req("filler", tokens(5000, 96), 1))])  # 6 blocks: evicts
    a = runner.run([(runner.now, req("again-recent", recent, 1))])["again-recent"]
    b = runner.run([(runner.now, req("again-old", old, 1))])["again-old"]
    assert a.cached_tokens == 48
    assert b.cached_tokens < 48
    assert engine.kv.evictions > 0


@pytest.mark.parametrize(
    ("stop_at", "max_tokens", "n", "reason"),
    [(None, 7, 7, "length"), (5, 7, 5, "stop"), (9, 7, 7, "length"), (7, 7, 7, "stop")],
)
def test_finish_reason_and_length(
    stop_at: int | None, max_tokens: int, n: int, reason: str
) -> None:
    runner = VirtualRunner(Engine(make_profile()))
    trace = runner.run([(0.0, req("a", tokens(0, 20), max_tokens, stop_at))])["a"]
    assert (trace.tokens, trace.finish_reason) == (n, reason)


def test_max_num_seqs_bounds_the_batch() -> None:
    engine = Engine(make_profile(max_num_seqs=3))
    runner = VirtualRunner(engine)
    for i in range(5):
        runner.submit(req(f"r{i}", tokens(100 * i, 8), 10))
    runner.step()
    assert (engine.num_running, engine.num_waiting) == (3, 2)


def test_speculative_decoding_yields_expected_tokens_per_step() -> None:
    spec = Speculative(num_draft_tokens=3, acceptance_rate=0.7)
    engine = Engine(
        make_profile(speculative=spec, max_model_len=40_000, num_kv_blocks=3000), seed=1
    )
    runner = VirtualRunner(engine)
    runner.run([(0.0, req("a", tokens(0, 8), 30_000))])
    c = engine.counters
    per_step = 1 + c.spec_accepted_tokens / c.spec_drafts
    assert per_step == pytest.approx(spec.expected_tokens_per_step(), rel=0.03)
    assert c.spec_draft_tokens == 3 * c.spec_drafts
    assert c.generation_tokens == 30_000


def test_request_validation() -> None:
    engine = Engine(make_profile(max_model_len=100))
    with pytest.raises(ValueError, match="max_model_len"):
        engine.add_request(req("a", tokens(0, 90), 20))
    engine.add_request(req("a", tokens(0, 10), 5))
    with pytest.raises(ValueError, match="duplicate"):
        engine.add_request(req("a", tokens(0, 10), 5))
