"""The fit and quality commands say clearly when the public datasets are absent."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from loadtests.cache_quality import cli as cache_quality
from loadtests.fit.cache_verifier import cli as fit_cache_verifier
from loadtests.fit.cross_encoder import cli as fit_cross_encoder


@pytest.mark.parametrize(
    "command", [fit_cache_verifier.main, cache_quality.main, fit_cross_encoder.main]
)
def test_absent_datasets_are_named_not_a_traceback(
    command: Callable[[list[str]], int], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert command(["--datasets", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert str(tmp_path / "qqp") in err
    assert "../shared/datasets" in err
    assert "--datasets" in err
