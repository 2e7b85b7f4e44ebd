from __future__ import annotations

import asyncio
import io
from pathlib import Path

import httpx2 as httpx
import pydantic
import pytest

from loadtests.sim.__main__ import parse_args
from loadtests.sim.fleet import FleetConfig, GroupConfig, group_profile, load_fleet, serve_fleet
from loadtests.sim.profile import available_profiles, load_profile

DEMO = Path(__file__).parents[3] / "loadtests" / "sim" / "fleets" / "demo.yaml"


@pytest.mark.parametrize("name", available_profiles())
def test_every_shipped_profile_loads(name: str) -> None:
    profile = load_profile(name)
    assert profile.max_model_len <= profile.num_kv_blocks * profile.block_size


def test_demo_fleet_and_strict_schema() -> None:
    config = load_fleet(DEMO)
    assert [(g.name, g.replicas, g.base_port) for g in config.groups] == [
        ("small", 2, 9101),
        ("large", 2, 9201),
    ]
    with pytest.raises(pydantic.ValidationError):
        FleetConfig.model_validate({"groups": [], "typo": 1})


def test_cli_shortcut_builds_one_group() -> None:
    config = parse_args(
        ["--profile", "llama-3.1-8b-h100", "--engine", "tgi", "--replicas", "3", "--port", "9000",
         "--speed", "5"]
    )  # fmt: skip
    (group,) = config.groups
    assert (group.engine, group.replicas, group.base_port) == ("tgi", 3, 9000)
    assert group.served_model == "meta-llama/Llama-3.1-8B-Instruct"
    assert config.speed == 5


async def test_serve_fleet_prints_replicas_and_serves_until_cancelled() -> None:
    config = FleetConfig.model_validate(
        {
            "speed": 100,
            "groups": [
                {"name": "s", "profile": "qwen2.5-1.5b-h100", "served_model": "m",
                 "replicas": 2, "base_port": 0},
                {"name": "t", "profile": "qwen2.5-1.5b-h100", "engine": "tgi",
                 "served_model": "m", "base_port": 0},
            ],
        }
    )  # fmt: skip
    started, out = asyncio.Event(), io.StringIO()
    task = asyncio.create_task(serve_fleet(config, started=started, out=out))
    await asyncio.wait_for(started.wait(), 10)
    lines = out.getvalue().splitlines()
    assert [line.split()[1:3] for line in lines] == [
        ["s-0", "vllm"],
        ["s-1", "vllm"],
        ["t-0", "tgi"],
    ]
    async with httpx.AsyncClient() as client:
        for line in lines:
            assert (await client.get(line.split()[-1] + "/health")).status_code == 200
    task.cancel()
    await asyncio.wait({task})


@pytest.mark.parametrize(
    ("flags", "seqs", "length"),
    [({}, 128, 4096), ({"max_num_seqs": 4}, 4, 4096),
     ({"max_num_seqs": 4, "max_model_len": 16384}, 4, 16384)],
)  # fmt: skip
def test_group_serving_flags_override_the_profile(
    flags: dict[str, int], seqs: int, length: int
) -> None:
    group = GroupConfig(name="g", profile="gemma-3-270m-vllm-cpu", served_model="m",
                        base_port=0, **flags)  # fmt: skip
    profile = group_profile(group)
    assert (profile.max_num_seqs, profile.max_model_len) == (seqs, length)
    assert profile.step_time == load_profile("gemma-3-270m-vllm-cpu").step_time


@pytest.mark.parametrize("flags", [{"max_num_seqs": 0}, {"max_model_len": 1}])
def test_group_serving_flags_are_validated(flags: dict[str, int]) -> None:
    with pytest.raises(pydantic.ValidationError):
        GroupConfig(name="g", profile="p", served_model="m", base_port=0, **flags)


def test_the_slo_fleet_is_two_four_slot_engines() -> None:
    config = load_fleet(DEMO.with_name("slo.yaml"))
    (group,) = config.groups
    assert (group.replicas, group_profile(group).max_num_seqs) == (2, 4)
