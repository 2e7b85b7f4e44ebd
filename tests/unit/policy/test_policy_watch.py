"""The policy file watcher reloads on change, and only on change (no real sleeps)."""

from __future__ import annotations

import asyncio
import os
import shutil
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


def _configmap_revision(volume: Path, name: str, text: str, mtime_ns: int | None) -> None:
    """Write a revision as the kubelet updates a ConfigMap volume: files in a new hidden
    directory, then the ``..data`` link swapped to it atomically, then the old one removed."""
    revision = volume / name
    revision.mkdir()
    (revision / "policy.yaml").write_text(text)
    if mtime_ns is not None:
        os.utime(revision / "policy.yaml", ns=(mtime_ns, mtime_ns))
    data = volume / "..data"
    old = data.resolve() if data.is_symlink() else None
    (volume / "..data_tmp").symlink_to(name)
    os.replace(volume / "..data_tmp", data)
    if old is not None:
        shutil.rmtree(old)
    if not (volume / "policy.yaml").is_symlink():
        (volume / "policy.yaml").symlink_to("..data/policy.yaml")


async def test_watch_sees_a_configmap_update(tmp_path: Path) -> None:
    """The swapped file may have the same size and time as the old one (time granularity,
    a one-character edit): the watcher must still see a new file."""
    _configmap_revision(tmp_path, "..2026_01_01_00_00_00.1", POLICY, None)
    path = tmp_path / "policy.yaml"
    old_mtime = path.stat().st_mtime_ns
    edited = POLICY.replace("fast:", "slow:")
    assert len(edited) == len(POLICY)
    results: list[ReloadResult] = []
    holder = PolicyHolder(load_policy_file(path), path=path, on_result=results.append)
    ticks = 0
    parked: asyncio.Queue[None] = asyncio.Queue()

    async def fake_sleep(seconds: float) -> None:
        nonlocal ticks
        ticks += 1
        if ticks == 1:
            _configmap_revision(tmp_path, "..2026_01_01_00_01_00.2", edited, old_mtime)
        elif ticks > 2:
            parked.put_nowait(None)
            await asyncio.Event().wait()

    watcher = asyncio.create_task(holder.watch(sleep=fake_sleep))
    await asyncio.wait_for(parked.get(), timeout=10)
    watcher.cancel()

    assert path.stat().st_mtime_ns == old_mtime
    assert [r.changed for r in results] == [True]
    assert set(holder.current.models) == {"slow"}
