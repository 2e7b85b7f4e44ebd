"""The cross-encoder worker: off the loop, batched, every wait bounded."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

import pytest

from gateway.cache.judgement.cross_worker import CrossWorker


class GatedScorer:
    """Scores a pair by the length of its asked text; waits on ``gate`` when set."""

    def __init__(self) -> None:
        self.gate: threading.Event | None = None
        self.entered = threading.Event()
        self.batches: list[int] = []
        self.fail = False

    def __call__(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        self.batches.append(len(pairs))
        if self.gate is not None:
            self.entered.set()
            self.gate.wait(10)
        if self.fail:
            raise RuntimeError("model broke")
        return [len(b) / 100 for _, b in pairs]


async def test_a_lone_pair_is_scored_at_once() -> None:
    scorer = GatedScorer()
    worker = CrossWorker(scorer)
    assert await worker.score("a", "four", timeout_s=5) == pytest.approx(0.04)
    await worker.close()


async def test_pairs_that_wait_together_share_a_forward_pass() -> None:
    scorer = GatedScorer()
    scorer.gate = threading.Event()
    worker = CrossWorker(scorer, max_batch=8)
    first = asyncio.create_task(worker.score("a", "x", timeout_s=5))
    await asyncio.to_thread(scorer.entered.wait, 5)
    rest = [asyncio.create_task(worker.score("a", "y" * n, timeout_s=5)) for n in range(1, 4)]
    await asyncio.sleep(0)
    scorer.gate.set()
    assert await first == pytest.approx(0.01)
    assert [await t for t in rest] == pytest.approx([0.01, 0.02, 0.03])
    assert scorer.batches == [1, 3]
    await worker.close()


async def test_a_late_score_is_none_and_the_loop_is_not_held() -> None:
    scorer = GatedScorer()
    scorer.gate = threading.Event()
    worker = CrossWorker(scorer)
    assert await worker.score("a", "b", timeout_s=0.01) is None
    scorer.gate.set()
    await worker.close()


async def test_too_many_waiting_pairs_are_refused_at_once() -> None:
    scorer = GatedScorer()
    scorer.gate = threading.Event()
    worker = CrossWorker(scorer, max_batch=1, max_pending=2)
    running = asyncio.create_task(worker.score("a", "b", timeout_s=5))
    await asyncio.to_thread(scorer.entered.wait, 5)
    waiting = [asyncio.create_task(worker.score("a", "c", timeout_s=5)) for _ in range(2)]
    await asyncio.sleep(0)
    assert await worker.score("a", "d", timeout_s=5) is None  # two already wait
    scorer.gate.set()
    assert await running is not None
    results = [await t for t in waiting]
    assert None not in results
    await worker.close()


async def test_a_pair_whose_caller_left_is_not_scored() -> None:
    scorer = GatedScorer()
    scorer.gate = threading.Event()
    worker = CrossWorker(scorer, max_batch=8)
    running = asyncio.create_task(worker.score("a", "b", timeout_s=5))
    await asyncio.to_thread(scorer.entered.wait, 5)
    assert await worker.score("a", "late", timeout_s=0.01) is None  # queued, then gave up
    scorer.gate.set()
    await running
    await worker.close()
    assert scorer.batches == [1]


async def test_a_failing_model_gives_no_score() -> None:
    scorer = GatedScorer()
    scorer.fail = True
    worker = CrossWorker(scorer)
    assert await worker.score("a", "b", timeout_s=5) is None
    await worker.close()
    assert await worker.score("a", "b", timeout_s=5) is None  # closed
