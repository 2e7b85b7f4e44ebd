"""The policy file watcher reloads on change, and only on change (no real sleeps)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from gateway.policy import load_policy_file
from gateway.policy.reload import PolicyHolder, ReloadResult

POLICY = """
backends:
  - {name: a, url: "http://127.0.0.1:1", model: m, pool: p}
models:
  fast: {pool: p}
"""


async def test_watch_reloads_when_the_file_changes(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(POLICY)
    results: list[ReloadResult] = []
    holder = PolicyHolder(load_policy_file(path), path=path, on_result=results.append)
    edits = [
        POLICY + "  smart: {pool: p}\n",  # a change: reload
        None,  # no change: no reload
        POLICY + "  smart: {pool: nowhere}\n",  # a broken change: refused
    ]
    ticks: asyncio.Queue[None] = asyncio.Queue()

    async def fake_sleep(seconds: float) -> None:
        assert seconds == holder.current.source.server.reload_poll_s
        if not edits:
            ticks.put_nowait(None)
            await asyncio.Event().wait()  # park the watcher: the test is over
        edit = edits.pop(0)
        if edit is not None:
            path.write_text(edit)
            # mtime granularity can hide two writes in one tick; size alone may not differ.
            stat = path.stat()
            os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))

    watcher = asyncio.create_task(holder.watch(sleep=fake_sleep))
    await asyncio.wait_for(ticks.get(), timeout=10)
    watcher.cancel()

    assert [r.ok for r in results] == [True, False]
    assert results[0].changed
    assert "smart" in holder.current.models
    assert holder.current.models["smart"].pool == "p"
    assert results[1].error is not None
    assert "models.smart.pool" in results[1].error
