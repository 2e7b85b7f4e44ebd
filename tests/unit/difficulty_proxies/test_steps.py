"""The step count of a GSM8K worked solution, as the difficulty-proxy benchmark reads it."""

from __future__ import annotations

import pytest

from loadtests.difficulty_proxies.cli import steps


@pytest.mark.parametrize(
    ("solution", "expected"),
    [
        ("Natalia sold 48/2 = <<48/2=24>>24 clips in May.\nThen 48+24 = 72.\n#### 72", 2),
        ("One step.\n\n\n#### 5", 1),
        ("#### 5", 1),  # no worked step at all still counts as one
        ("a\nb\nc\nd\n#### 4\n", 4),
    ],
)
def test_steps_are_the_lines_before_the_answer(solution: str, expected: int) -> None:
    assert steps(solution) == expected
