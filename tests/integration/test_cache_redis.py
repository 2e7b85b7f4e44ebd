"""The shared cache: a real redis-server, two gateway processes, the real openai SDK.

An answer stored through one gateway is served by the other (its index learns of the entry
over pub/sub); Redis going down means misses, never errors; after Redis comes back the
gateways resynchronise and cache again.
"""

from __future__ import annotations

import queue
import subprocess
import threading
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import openai
import pytest

from loadtests.kit.fake_upstream import FakeConfig, FakeLog, build_fake
from loadtests.kit.ports import free_port
from tests.support.policies import single_pool
from tests.support.processes import gateway_process
from tests.support.redis_server import RedisServer, redis_server
from tests.support.servers import serve

pytestmark = pytest.mark.timeout(240)


class Output:
    """Drains a child's output in a thread (so it never blocks) and waits for markers."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self._lines: queue.Queue[str] = queue.Queue()
        self._thread = threading.Thread(target=self._pump, args=(proc,), daemon=True)
        self._thread.start()

    def _pump(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self._lines.put(line)

    def wait_for(self, *markers: str, timeout: float = 120) -> None:
        missing = set(markers)
        while missing:
            line = self._lines.get(timeout=timeout)
            missing = {m for m in missing if m not in line}


class Replica:
    def __init__(self, stack: ExitStack, policy: Path) -> None:
        port = free_port()
        args = ["serve", "--policy", str(policy), "--port", str(port), "--log-level", "debug"]
        self.proc = stack.enter_context(gateway_process(args))
        self.out = Output(self.proc)
        self.sdk = openai.OpenAI(
            base_url=f"http://127.0.0.1:{port}/v1", api_key="k", max_retries=0, timeout=30
        )

    def ask(self, text: str) -> str:
        raw = self.sdk.chat.completions.with_raw_response.create(
            model="fast", messages=[{"role": "user", "content": text}], temperature=0
        )
        assert raw.parse().choices[0].message.content
        return raw.headers["x-gateway-cache"]


@pytest.fixture
def redis(tmp_path: Path) -> Iterator[RedisServer]:
    with redis_server(tmp_path) as server:
        yield server


@pytest.fixture
def upstream(fake_log: FakeLog) -> Iterator[str]:
    config = FakeConfig(ttft_s=0.001, tokens=4, itl_s=0.0, finish_reason="stop")
    with serve(build_fake(config, fake_log)) as url:
        yield url


def test_two_replicas_share_answers_and_survive_redis_restarts(
    redis: RedisServer, upstream: str, fake_log: FakeLog, tmp_path: Path
) -> None:
    # The embedding model must answer within embed_timeout_s for the semantic hit below; the
    # default (0.2 s) is too short for a busy machine, where the hit would become a miss.
    extra = (
        f"cache:\n  enabled: true\n  store: redis\n  redis: {{url: '{redis.url}'}}\n"
        # a bound at which paraphrases are served (at the default, 0.02, none is)
        "  semantic: {embed_timeout_s: 60, verifier: features, max_false_hit_rate: 0.1}\n"
    )
    policy = tmp_path / "policy.yaml"
    policy.write_text(single_pool(upstream, extra=extra))
    with ExitStack() as stack:
        a, b = Replica(stack, policy), Replica(stack, policy)
        for replica in (a, b):
            replica.out.wait_for("embedding model ready", "cache index synced from Redis")

        assert a.ask("How do I reset my password?") == "miss"
        b.out.wait_for("cache: entry")  # B's index learnt of A's entry over pub/sub
        assert b.ask("How can I reset my password?") == "semantic"
        assert b.ask("How do I reset my password?") == "exact"
        assert b.ask("How do I not reset my password?") == "miss"
        assert len(fake_log.bodies) == 2

        redis.stop()
        assert a.ask("How do I reset my password?") == "miss"  # an answer, not an error
        assert a.ask("What is the refund policy?") == "miss"

        redis.start()
        a.out.wait_for("cache index synced from Redis")
        assert a.ask("Where is my order?") == "miss"
        a.out.wait_for("cache: put entry")  # stored after the answer went out
        assert a.ask("Where is my order?") == "exact"
