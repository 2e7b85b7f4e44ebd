"""A refused policy: where it came from and every bad field with its reason."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class FieldProblem:
    path: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}" if self.path else self.reason


class PolicyError(Exception):
    """The policy could not be parsed, validated or compiled."""

    def __init__(self, source: str, problems: Sequence[FieldProblem]) -> None:
        self.source = source
        self.problems = tuple(problems)
        super().__init__(self.render())

    def render(self) -> str:
        lines = [f"{self.source}: invalid policy"]
        lines.extend(f"  {problem}" for problem in self.problems)
        return "\n".join(lines)
