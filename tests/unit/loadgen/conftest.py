from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from loadgen_fake_upstream import FakeConfig, serve

WORKLOADS = Path(__file__).resolve().parents[3] / "loadtests" / "workloads"


@pytest.fixture(scope="module")
def fake_config() -> FakeConfig:
    return FakeConfig(ttft_s=0.05, itl_s=0.005)


@pytest.fixture(scope="module")
def fake_url(fake_config: FakeConfig) -> Iterator[str]:
    with serve(fake_config) as url:
        yield url


@pytest.fixture
def workloads_dir() -> Path:
    return WORKLOADS
