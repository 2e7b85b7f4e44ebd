"""PolicyHolder: reload from a file, keep the running policy when the new one is bad."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.policy.compile import CompiledPolicy
from gateway.policy.loader import load_policy_text
from gateway.policy.reload import PolicyHolder, ReloadResult
from tests.unit.gateway.helpers import MINIMAL_POLICY

CHANGED = MINIMAL_POLICY.replace("8001", "8002")


class Recorder:
    def __init__(self) -> None:
        self.swaps: list[CompiledPolicy] = []
        self.results: list[ReloadResult] = []


@pytest.fixture
def policy_file(tmp_path: Path) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(MINIMAL_POLICY, encoding="utf-8")
    return path


def _write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


def _holder(path: Path | None, recorder: Recorder) -> PolicyHolder:
    return PolicyHolder(
        load_policy_text(MINIMAL_POLICY),
        path=path,
        on_swap=recorder.swaps.append,
        on_result=recorder.results.append,
    )


async def test_reload_swaps_a_changed_policy_once(policy_file: Path) -> None:
    rec = Recorder()
    holder = _holder(policy_file, rec)
    old = holder.current
    _write(policy_file, CHANGED)

    result = await holder.reload()

    assert result.ok
    assert result.changed
    assert result.error is None
    assert holder.current is not old
    assert holder.current.backends[0].url == "http://127.0.0.1:8002"
    assert result.digest == holder.current.digest != old.digest
    assert rec.swaps == [holder.current]
    assert rec.results == [result]
    assert holder.digest_short == holder.current.digest[:12]


@pytest.mark.parametrize(
    "content",
    [MINIMAL_POLICY, "# a comment changes nothing\n" + MINIMAL_POLICY],
    ids=["same text", "same content"],
)
async def test_reload_of_unchanged_policy(policy_file: Path, content: str) -> None:
    rec = Recorder()
    holder = _holder(policy_file, rec)
    old = holder.current
    _write(policy_file, content)

    result = await holder.reload()

    assert result == ReloadResult(ok=True, changed=False, digest=old.digest)
    assert holder.current is old
    assert rec.swaps == []
    assert rec.results == [result]


# id -> (file content, fragment expected in the error)
BROKEN: dict[str, tuple[str, str]] = {
    "invalid YAML": ("backends: [\n", "not valid YAML"),
    "unknown key": (MINIMAL_POLICY + "colour: blue\n", "colour: unknown key"),
    "unknown pool": (MINIMAL_POLICY.replace("  fast:\n    pool: small", "  fast:\n    pool: x"),
                     "models.fast.pool: unknown pool 'x'"),
    "duplicate key": (MINIMAL_POLICY + "models: {}\n", "duplicate key 'models'"),
    "unhashable key": ("? [a]\n: 1\n", "unhashable key"),
}  # fmt: skip


@pytest.mark.parametrize(("content", "fragment"), BROKEN.values(), ids=BROKEN.keys())
async def test_broken_file_keeps_the_old_policy(
    policy_file: Path, content: str, fragment: str
) -> None:
    rec = Recorder()
    holder = _holder(policy_file, rec)
    old = holder.current
    _write(policy_file, content)

    result = await holder.reload()

    assert not result.ok
    assert not result.changed
    assert result.digest == old.digest
    assert result.error is not None
    assert result.error.startswith(f"{policy_file}: invalid policy")
    assert fragment in result.error
    assert holder.current is old
    assert rec.swaps == []
    assert rec.results == [result]


async def test_recovers_after_the_file_is_fixed(policy_file: Path) -> None:
    rec = Recorder()
    holder = _holder(policy_file, rec)
    _write(policy_file, "backends: [\n")
    assert not (await holder.reload()).ok

    _write(policy_file, CHANGED)
    result = await holder.reload()

    assert result.ok
    assert result.changed
    assert len(rec.swaps) == 1
    assert [r.ok for r in rec.results] == [False, True]


async def test_missing_file(tmp_path: Path) -> None:
    rec = Recorder()
    missing = tmp_path / "gone.yaml"
    holder = _holder(missing, rec)
    old = holder.current

    result = await holder.reload()

    assert not result.ok
    assert result.error is not None
    assert "cannot read" in result.error
    assert holder.current is old
    assert rec.swaps == []


async def test_no_path_configured() -> None:
    rec = Recorder()
    holder = _holder(None, rec)

    result = await holder.reload()

    assert result == ReloadResult(False, False, holder.current.digest, "no policy file to reload")
    assert rec.results == [result]
    assert holder.path is None


def test_swap_directly(policy_file: Path) -> None:
    rec = Recorder()
    holder = _holder(policy_file, rec)
    new = load_policy_text(CHANGED)

    assert holder.swap(load_policy_text(MINIMAL_POLICY)).changed is False
    assert holder.swap(new).changed is True
    assert holder.current is new
    assert rec.swaps == [new]
    assert [r.changed for r in rec.results] == [False, True]
