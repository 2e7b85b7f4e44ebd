"""Continuations as a deterministic model makes them: a prompt ending with the start of the
model's own answer gets the rest of that answer, anything else a fresh one (no server)."""

from __future__ import annotations

import pytest

from loadtests.sim import tokenizer
from loadtests.sim.clock import RealClock
from loadtests.sim.continuation import (
    Origin,
    continue_final_message,
    generated_prefix,
    origin,
    tail_splits,
)
from loadtests.sim.generation import SimRequestError, chat_prompt, natural_length, plan
from loadtests.sim.profile import NaturalStop
from loadtests.sim.replica import Replica, build_replica

from .conftest import make_profile

ROOT = "<|im_start|>user\nTell me about queues.<|im_end|>\n<|im_start|>assistant\n"
SEED = 3


def answer(prompt: str, n: int, seed: int = SEED) -> list[str]:
    return list(tokenizer.generate(prompt, seed, n))


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("", []),
        ("hello", []),
        ("x the model", [1, 5]),
        ("x the model.", [1, 5, 11]),
        ("x. the", [1, 2]),
        ("\nthe", []),  # a word without its leading space is not a generated piece
        ("assistant\n the cache", [10, 14]),
        ("x thexyz", []),
    ],
)
def test_tail_splits(prompt: str, expected: list[int]) -> None:
    assert tail_splits(prompt) == expected


def test_generated_prefix_is_exact_or_nothing() -> None:
    pieces = answer(ROOT, 12)
    for k in (1, 5, 12):
        assert generated_prefix(ROOT, SEED, "".join(pieces[:k])) == k
    text = "".join(pieces[:5])
    assert generated_prefix(ROOT, SEED, text[:-1]) is None  # cut inside a piece
    assert generated_prefix(ROOT, SEED, text + " zzz") is None
    assert generated_prefix(ROOT, SEED + 1, text) is None  # another seed's answer
    assert generated_prefix(ROOT, SEED, "") is None


@pytest.mark.parametrize("k", [1, 2, 10, 40])
def test_a_prompt_ending_with_its_answer_continues_it(k: int) -> None:
    pieces = answer(ROOT, k)
    assert origin(ROOT + "".join(pieces), SEED) == Origin(ROOT, k)


def test_other_prompts_are_their_own_origin() -> None:
    pieces = answer(ROOT, 6)
    wrong = [*pieces[:3], " cache" if pieces[3] != " cache" else " queue", *pieces[4:]]
    for prompt in (ROOT, ROOT + "".join(wrong), ROOT + "".join(pieces)[:-1], "the model"):
        assert origin(prompt, SEED) == Origin(prompt, 0)


def test_continuing_a_continuation_finds_the_first_origin() -> None:
    pieces = answer(ROOT, 30)
    assert origin(ROOT + "".join(pieces[:10]), SEED) == Origin(ROOT, 10)
    # The rest of the answer to the continuation is the rest of the original answer.
    cont = ROOT + "".join(pieces[:10])
    rest = answer(ROOT, 30)[10:]
    assert origin(cont + "".join(rest[:5]), SEED) == Origin(ROOT, 15)


def test_chat_prompt_open_last_continues_the_assistant_turn() -> None:
    messages = [{"role": "user", "content": "Tell me about queues."}]
    partial = " the model"
    opened = chat_prompt([*messages, {"role": "assistant", "content": partial}], open_last=True)
    assert opened == chat_prompt(messages) + partial
    closed = chat_prompt([*messages, {"role": "assistant", "content": partial}])
    assert closed.endswith("<|im_end|>\n<|im_start|>assistant\n")


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({}, False),
        ({"continue_final_message": False}, False),
        ({"continue_final_message": True, "add_generation_prompt": False}, True),
        ({"continue_final_message": True}, ValueError),
        ({"continue_final_message": True, "add_generation_prompt": True}, ValueError),
    ],
)
def test_continue_final_message_flags(body: dict[str, object], expected: object) -> None:
    if expected is ValueError:
        with pytest.raises(ValueError, match="add_generation_prompt"):
            continue_final_message(body)
    else:
        assert continue_final_message(body) is expected


STOP = NaturalStop(min_tokens=20, max_tokens=60)


def _replica() -> Replica:
    return build_replica(make_profile(natural_stop=STOP), kind="vllm", served_model="m",
                         clock=RealClock())  # fmt: skip


@pytest.mark.parametrize("k", [1, 7])
def test_a_continuations_plan_stops_where_the_original_stops(k: int) -> None:
    replica = _replica()
    natural = natural_length(ROOT, SEED, STOP)
    prompt = ROOT + "".join(answer(ROOT, k))
    p = plan(replica, prompt, 500, ignore_eos=False, seed=SEED)
    assert (p.origin, p.stop_at) == (Origin(ROOT, k), natural - k)
    assert p.prompt_ids == tokenizer.encode(prompt)  # the partial is prefilled as prompt
    eos = plan(replica, prompt, 500, ignore_eos=True, seed=SEED)
    assert (eos.origin, eos.stop_at) == (Origin(ROOT, k), None)


def test_a_partial_past_the_originals_end_is_a_new_prompt() -> None:
    replica = _replica()
    natural = natural_length(ROOT, SEED, STOP)
    prompt = ROOT + "".join(answer(ROOT, natural))
    p = plan(replica, prompt, 500, ignore_eos=False, seed=SEED)
    assert (p.origin, p.stop_at) == (Origin(prompt, 0), natural_length(prompt, SEED, STOP))


def test_plan_still_refuses_what_does_not_fit() -> None:
    with pytest.raises(SimRequestError):
        plan(_replica(), ROOT, 10_000, ignore_eos=False, seed=SEED)


@pytest.mark.parametrize(("default", "k"), [(10, 4), (10, 9), (500, 7)])
def test_without_max_tokens_a_continuation_stops_where_the_first_answer_was_cut(
    default: int, k: int
) -> None:
    replica = build_replica(make_profile(natural_stop=STOP, default_max_tokens=default),
                            kind="vllm", served_model="m", clock=RealClock())  # fmt: skip
    first = plan(replica, ROOT, None, ignore_eos=False, seed=SEED)
    assert first.stop_at == min(natural_length(ROOT, SEED, STOP), default)
    assert first.stop_at is not None
    prompt = ROOT + "".join(answer(ROOT, k))
    p = plan(replica, prompt, None, ignore_eos=False, seed=SEED)
    assert (p.origin, p.stop_at) == (Origin(ROOT, k), first.stop_at - k)
    eos = plan(replica, prompt, None, ignore_eos=True, seed=SEED)
    assert (eos.origin, eos.stop_at) == (Origin(ROOT, k), min(default, 4096) - k)
