"""Hot reload: hold the active policy and swap it atomically when a new one compiles.

A reload parses and compiles the file off the event loop. On success the new policy replaces
the old in one assignment, so a request keeps the policy object it started with; on failure
the running policy stays and the error is reported (log, metric, return value).
The file watcher polls the file every ``server.reload_poll_s`` seconds and reloads when its
(device, inode, mtime, size) changes. The path is followed through symlinks, and the inode
makes a swapped file count as a change even with the same size and time: that is how a
Kubernetes ConfigMap volume updates (``policy.yaml -> ..data/policy.yaml``, and the ``..data``
link swapped atomically to a new directory).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from gateway.policy.compile import CompiledPolicy
from gateway.policy.loader import load_policy_file
from gateway.schema.problems import PolicyError

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ReloadResult:
    ok: bool
    changed: bool
    digest: str
    error: str | None = None


class PolicyHolder:
    """The active policy, and the way to replace it."""

    def __init__(
        self,
        policy: CompiledPolicy,
        *,
        path: Path | None = None,
        on_swap: Callable[[CompiledPolicy], None] = lambda _: None,
        on_result: Callable[[ReloadResult], None] = lambda _: None,
    ) -> None:
        self._policy = self._base = policy
        self._path = path
        self._on_swap = on_swap
        self._on_result = on_result
        self._lock = asyncio.Lock()
        self._refine: Callable[[CompiledPolicy], CompiledPolicy] = lambda p: p

    @property
    def current(self) -> CompiledPolicy:
        return self._policy

    def refine(self, refine: Callable[[CompiledPolicy], CompiledPolicy]) -> None:
        """Apply ``refine`` to the policy as compiled, now and to every policy swapped in
        later: what the gateway learned of its backends (their served context), not a
        reload (the digest stays; requests in flight keep the policy they started with)."""
        self._refine = refine
        self._policy = refine(self._base)

    @property
    def path(self) -> Path | None:
        return self._path

    def swap(self, policy: CompiledPolicy) -> ReloadResult:
        changed = policy.digest != self._policy.digest
        if changed:
            self._base, policy = policy, self._refine(policy)
            self._on_swap(policy)
            self._policy = policy
            log.info("policy swapped, digest %s", policy.digest[:12])
        result = ReloadResult(ok=True, changed=changed, digest=policy.digest)
        self._on_result(result)
        return result

    async def reload(self) -> ReloadResult:
        """Reload from the file; keep the running policy if the file is bad."""
        if self._path is None:
            result = ReloadResult(False, False, self._policy.digest, "no policy file to reload")
            self._on_result(result)
            return result
        async with self._lock:
            try:
                policy = await asyncio.to_thread(load_policy_file, self._path)
            except PolicyError as exc:
                log.error("policy reload refused, keeping %s:\n%s", self.digest_short, exc)
                result = ReloadResult(False, False, self._policy.digest, exc.render())
                self._on_result(result)
                return result
            return self.swap(policy)

    @property
    def digest_short(self) -> str:
        return self._policy.digest[:12]

    async def watch(self, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        """Reload whenever the file changes or is swapped (``sleep`` is injectable)."""
        if self._path is None:
            return
        last = _fingerprint(self._path)
        while True:
            await sleep(self._policy.source.server.reload_poll_s)
            now = _fingerprint(self._path)
            if now != last:
                last = now
                await self.reload()


def _fingerprint(path: Path) -> tuple[int, int, int, int] | None:
    try:
        st = os.stat(path)  # follows symlinks: the file the path names now
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)
