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


CACHED = StepTime(base_s=0.01, per_prefill_token_s=0.001, per_running_seq_s=0.0,
                  per_context_token_s=0.0, per_cached_chunk_s=0.02)  # fmt: skip


@pytest.mark.parametrize(
    ("prompt_len", "cached_chunks"),
    [(500, 0), (512, 0), (513, 1), (1100, 2)],  # chunks of 512: all but the first follow KV
)
def test_chunks_after_cached_kv_pay_the_fixed_cost(prompt_len: int, cached_chunks: int) -> None:
    runner = VirtualRunner(Engine(make_profile(step_time=CACHED)))
    trace = runner.run([(0.0, req("a", tokens(0, prompt_len), 1))])["a"]
    steps = -(-prompt_len // 512)
    expected = steps * 0.01 + prompt_len * 0.001 + cached_chunks * 0.02
    assert trace.first_token == pytest.approx(expected)


def test_a_prefix_hit_pays_the_cached_chunk_cost_once() -> None:
    runner = VirtualRunner(Engine(make_profile(step_time=CACHED)))
    prompt = tokens(0, 100)  # 6 full blocks; 96 cached, 4 computed on the repeat
    runner.run([(0.0, req("a", prompt, 1))])
    t0 = runner.now
    trace = runner.run([(t0, req("b", prompt, 1))])["b"]
    assert trace.first_token is not None
    assert trace.first_token - t0 == pytest.approx(0.01 + 4 * 0.001 + 0.02)


def step_durations(cv: float, seed: int, n: int = 4000) -> list[float]:
    engine = Engine(make_profile(step_time=STEP, step_time_cv=cv), seed=seed)
    engine.add_request(req("a", tokens(0, 8), n))
    return [engine.step().duration_s for _ in range(n)]


def test_step_time_noise_keeps_the_mean_and_has_the_profiles_spread() -> None:
    exact = step_durations(0.0, seed=1)
    assert set(exact[1:]) == {0.01}  # decode steps: the model's time, no noise
    noisy = step_durations(0.2, seed=1)[1:]
    mean = sum(noisy) / len(noisy)
    sd = (sum((d - mean) ** 2 for d in noisy) / len(noisy)) ** 0.5
    assert mean == pytest.approx(0.01, rel=0.02)
    assert sd / mean == pytest.approx(0.2, rel=0.1)
    assert noisy == step_durations(0.2, seed=1)[1:]  # seeded: the same run twice
    assert noisy != step_durations(0.2, seed=2)[1:]


def test_reported_waiting_is_what_the_last_step_left_behind() -> None:
    """vLLM's statistics are taken after a step's scheduling: a request that arrived since
    is not yet waiting there; one the step could not admit is."""
    engine = Engine(make_profile(max_num_seqs=2))
    runner = VirtualRunner(engine)
    runner.submit(req("a", tokens(0, 8), 10))
    assert (engine.num_waiting, engine.reported_waiting) == (1, 0)  # arrived, not scheduled
    runner.step()
    for rid in ("b", "c"):
        runner.submit(req(rid, tokens(100 if rid == "b" else 200, 8), 10))
    assert (engine.num_waiting, engine.reported_waiting) == (2, 0)
    runner.step()  # admits b; c finds no slot
    assert (engine.num_running, engine.num_waiting, engine.reported_waiting) == (2, 1, 1)
    engine.abort("c")
    assert engine.reported_waiting == 0
