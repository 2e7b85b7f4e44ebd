"""What the host board costs a worker, operation by operation (microseconds, this machine).

Each operation runs ``n`` times in a loop on a board in a temporary folder with 4 rows: a
read of the siblings' figure of a backend (``others``, called a few times per request by
replica choice and the TTFT features), a backend's counts published (three per request), an
admission slot checked and taken under the host lock (twice per request: taken, and the
release's hand-over), and a tenant's two buckets charged under the lock (once per request
of a tenant with limits).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from gateway.host.board import Board
from gateway.host.buckets import HostRateLimiter
from gateway.host.shares import BackendShare, PoolShare
from gateway.schema import RateLimit


def _per_op_us(op: Callable[[], object], n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        op()
    return round((time.perf_counter() - start) / n * 1e6, 2)


def board_costs(n: int = 100_000) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        board = Board.create(Path(tmp), rows=4)
        board.claim_row()
        backend, pool = BackendShare(board, "b"), PoolShare(board, "p")
        limits = HostRateLimiter(board, time.perf_counter)
        limit = RateLimit(requests_per_minute=10**7, tokens_per_minute=10**10)

        def claim() -> None:
            with pool.locked():
                pool.publish_held(pool.held() + 1)

        costs = {
            "siblings' figure read": _per_op_us(backend.inflight, n),
            "backend counts published": _per_op_us(lambda: backend.publish(1, 1, 100.0), n),
            "slot checked and taken under the lock": _per_op_us(claim, n),
            "tenant buckets charged under the lock": _per_op_us(
                lambda: limits.charge("t", limit, 10.0), n // 4
            ),
        }
        board.close()
    return costs
