"""What a rewrite did, as a small immutable record the gateway can log and report."""

from __future__ import annotations

from dataclasses import dataclass

from gateway.rewrite.config import NotePlacement


@dataclass(frozen=True, slots=True)
class MovedFragment:
    """One volatile fragment moved into the note.

    ``message`` is the index, in the rewritten ``messages``, of the message it came from;
    ``label`` is the placeholder text between the brackets.
    """

    kind: str
    label: str
    text: str
    message: int


@dataclass(frozen=True, slots=True)
class RewriteRecord:
    fragments: tuple[MovedFragment, ...] = ()
    note_placement: NotePlacement | None = None
    tools_reordered: bool = False
    tool_keys_sorted: bool = False
    whitespace_changes: int = 0  # text pieces whose whitespace changed
    system_hoisted: int = 0  # system/developer messages moved to the front

    @property
    def changed(self) -> bool:
        return bool(
            self.fragments
            or self.tools_reordered
            or self.tool_keys_sorted
            or self.whitespace_changes
            or self.system_hoisted
        )

    @property
    def kinds(self) -> tuple[str, ...]:
        """The kinds moved, each once, in order of first appearance."""
        return tuple(dict.fromkeys(f.kind for f in self.fragments))

    def summary(self) -> str:
        """A short ``;``-separated account for logs, e.g. ``moved=timestamp,uuid;tools=sorted``."""
        parts: list[str] = []
        if self.fragments:
            parts.append("moved=" + ",".join(self.kinds))
        if self.tools_reordered or self.tool_keys_sorted:
            parts.append("tools=" + ("reordered" if self.tools_reordered else "keys"))
        if self.whitespace_changes:
            parts.append(f"whitespace={self.whitespace_changes}")
        if self.system_hoisted:
            parts.append(f"hoisted={self.system_hoisted}")
        return ";".join(parts) or "unchanged"
