from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import openai
import pytest

from gateway.app import build_app
from gateway.policy import load_policy_file, load_policy_text
from loadtests.kit.fake_upstream import FakeConfig, FakeLog, build_fake
from tests.support.policies import single_pool
from tests.support.servers import serve

GatewayFactory = Callable[..., AbstractContextManager[str]]


@pytest.fixture
def fake_log() -> FakeLog:
    return FakeLog()


@pytest.fixture
def upstream(fake_log: FakeLog) -> Iterator[str]:
    config = FakeConfig(model="fake-model", ttft_s=0.005, tokens=5, itl_s=0.001)
    with serve(build_fake(config, fake_log)) as url:
        yield url


@pytest.fixture
def start_gateway() -> GatewayFactory:
    @contextmanager
    def start(policy_text: str | None = None, *, path: Path | None = None) -> Iterator[str]:
        if path is not None:
            policy = load_policy_file(path)
        else:
            assert policy_text is not None
            policy = load_policy_text(policy_text)
        with serve(build_app(policy, policy_path=path)) as url:
            yield url

    return start


@pytest.fixture
def gateway(upstream: str, start_gateway: GatewayFactory) -> Iterator[str]:
    with start_gateway(single_pool(upstream)) as url:
        yield url


@pytest.fixture
def client(gateway: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=gateway + "/v1", api_key="unused", max_retries=0, timeout=10)
