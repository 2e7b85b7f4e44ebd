"""The ramp rows' plans: levels, request shapes, one time line of request indices (pure)."""

from __future__ import annotations

import pytest

from loadtests.sim.fleet import group_profile, load_fleet
from loadtests.slo.ramps import FAST, SHIFT, SLOTS8, parse_levels, ramp


@pytest.mark.parametrize(
    ("text", "levels"),
    [
        ("4:200,64:512,200:1000", [(4, 200, None), (64, 512, None), (200, 1000, None)]),
        (" 8:1 ", [(8, 1, None)]),
        ("16:40@6000,64:512", [(16, 40, 6000), (64, 512, None)]),
    ],
)
def test_levels_are_users_requests_and_prompt_tokens(
    text: str, levels: list[tuple[int, int, int | None]]
) -> None:
    assert parse_levels(text) == levels


@pytest.mark.parametrize(
    "text", ["", "4", "4:", "a:3", "0:10", "4:0", "4:-1", "4:2.5", "4:3@", "4:3@0", "4:3@x"]
)
def test_bad_levels_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="level"):
        parse_levels(text)


def test_a_ramp_runs_its_indices_on_across_levels() -> None:
    planned = ramp(FAST, "4:3,64:5", 0, "served")
    assert [lv.load for lv in planned.levels] == ["c=4", "c=64"]
    assert [lv.concurrency for lv in planned.levels] == [4, 64]
    indices = [r.index for lv in planned.levels for r in lv.plan]
    assert indices == list(range(8)) == list(range(planned.requests()))
    assert planned == ramp(FAST, "4:3,64:5", 0, "served")  # the same for every target


@pytest.mark.parametrize("shape", [FAST, SLOTS8])
def test_requests_are_one_short_chat_shape(shape) -> None:  # type: ignore[no-untyped-def]
    plan = [r for lv in ramp(shape, "2:50", 1, "m").levels for r in lv.plan]
    assert {r.model for r in plan} == {"m"}
    assert {r.max_tokens for r in plan} == {shape.output_tokens}
    assert all(r.body()["ignore_eos"] is True for r in plan)
    words = sorted(len(r.messages[-1]["content"].split()) for r in plan)
    assert shape.prompt_tokens / 2 < words[len(words) // 2] < shape.prompt_tokens * 2


def test_a_level_of_its_own_prompts_keeps_the_others_draws() -> None:
    plain, shifted = ramp(SHIFT, "2:3,4:5", 0, "m"), ramp(SHIFT, "2:3@6000,4:5", 0, "m")
    assert shifted.levels[1].plan == plain.levels[1].plan  # the short level: the same requests
    assert [r.index for lv in shifted.levels for r in lv.plan] == list(range(8))
    assert [lv.load for lv in shifted.levels] == ["c=2, 6000-token prompts", "c=4"]
    long = [len(r.messages[-1]["content"].split()) for r in shifted.levels[0].plan]
    assert min(long) > 1000  # lognormal around 6000, at least a quarter of it


def test_the_fleets_are_one_vllm_engine_of_their_slots() -> None:
    for shape, slots in ((FAST, 256), (SLOTS8, 8), (SHIFT, 64)):
        fleet = load_fleet(shape.fleet)
        (group,) = fleet.groups
        assert (group.replicas, group.engine) == (1, "vllm")
        assert group_profile(group).max_num_seqs == slots
