from __future__ import annotations

import asyncio
import io
from pathlib import Path

import httpx2 as httpx
import pydantic
import pytest

from loadtests.sim.__main__ import parse_args
from loadtests.sim.fleet import FleetConfig, load_fleet, serve_fleet
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
