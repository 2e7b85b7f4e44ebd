"""The host board: what each worker of ``serve --workers N`` shows its siblings, in one file
mapped into every worker's memory (``/dev/shm`` where the host has it).

Layout (native byte order, 8-byte cells, so every cell is aligned):

- header: ``MAGIC``, ``rows``, ``slots``;
- names (the directory): ``slots`` entries of ``NAME_BYTES``, a name in UTF-8 padded with
  NUL bytes (a longer name is stored as its BLAKE2b digest); an empty entry is free;
- owners: per row, the pid of the worker that writes it (0: free);
- rows: per row, per slot, ``CELLS`` float64 figures that only the row's worker writes;
- shared: per slot, ``SHARED`` float64 figures any worker changes under the lock.

A worker registers a name once (under the lock) and keeps its slot; it writes its own row
without a lock (one writer per cell, and an aligned 8-byte store is never seen half done);
it reads its siblings' rows when it decides, so it sees their figures at once. The lock is
``flock`` on ``board.lock`` beside the board: it guards registering names, claiming rows and
check-and-change sequences (an admission slot, a rate-limit bucket), each a few microseconds.

A worker that died leaves its row behind: claiming a row takes a free one or one whose owner
is gone, and ``sweep`` (run by every worker about once a second) frees and zeroes the rows
of workers that are gone, so what a dead worker held stops counting.

Parameters: ``rows`` (workers at once, a restarted one included), ``slots`` (names).
"""

from __future__ import annotations

import fcntl
import hashlib
import mmap
import os
from pathlib import Path

MAGIC = 0x4C47424F41524431  # "LGBOARD1"
NAME_BYTES = 64
CELLS = 8
SHARED = 2
_HEADER = 8  # cells
BOARD_FILE = "board"
LOCK_FILE = "board.lock"


class BoardFull(RuntimeError):
    """Every slot of the directory holds a name."""


def _encoded(name: str) -> bytes:
    raw = name.encode()
    if len(raw) > NAME_BYTES or not raw:
        raw = hashlib.blake2b(raw, digest_size=NAME_BYTES // 2).hexdigest().encode()
    return raw.ljust(NAME_BYTES, b"\0")


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, dead but not yet reaped, does not)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc: trust kill
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


class _Lock:
    """``flock`` on the board's lock file, as a context manager."""

    __slots__ = ("_fd",)

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def __enter__(self) -> None:
        fcntl.flock(self._fd, fcntl.LOCK_EX)

    def __exit__(self, *exc: object) -> None:
        fcntl.flock(self._fd, fcntl.LOCK_UN)


class Board:
    """One mapping of the board; each worker attaches its own."""

    def __init__(self, folder: Path, rows: int, slots: int, mapping: mmap.mmap) -> None:
        self.folder = folder
        self.rows = rows
        self.slots = slots
        self._map = mapping
        self._cells = memoryview(mapping).cast("d")
        self._ints = memoryview(mapping).cast("q")
        self._names_at = _HEADER * 8
        self._owners_at = _HEADER + slots * NAME_BYTES // 8
        self._rows_at = self._owners_at + rows
        self._shared_at = self._rows_at + rows * slots * CELLS
        self._lock_fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        self._lock = _Lock(self._lock_fd)
        self._known: dict[str, int] = {}
        self.row = -1  # this worker's, once claimed

    @staticmethod
    def size(rows: int, slots: int) -> int:
        return 8 * (
            _HEADER + slots * NAME_BYTES // 8 + rows + rows * slots * CELLS + slots * SHARED
        )

    @classmethod
    def create(cls, folder: Path, rows: int, slots: int = 4096) -> Board:
        """A new, zeroed board in ``folder`` (which must exist)."""
        if rows < 1 or slots < 1:
            raise ValueError("a board needs at least one row and one slot")
        path = folder / BOARD_FILE
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.ftruncate(fd, cls.size(rows, slots))
            mapping = mmap.mmap(fd, cls.size(rows, slots))
        finally:
            os.close(fd)
        board = cls(folder, rows, slots, mapping)
        board._ints[1], board._ints[2] = rows, slots
        board._ints[0] = MAGIC
        return board

    @classmethod
    def attach(cls, folder: Path) -> Board:
        """The board a supervisor created in ``folder``."""
        fd = os.open(folder / BOARD_FILE, os.O_RDWR)
        try:
            mapping = mmap.mmap(fd, os.fstat(fd).st_size)
        finally:
            os.close(fd)
        ints = memoryview(mapping).cast("q")
        magic, rows, slots = ints[0], ints[1], ints[2]
        ints.release()
        if magic != MAGIC:
            mapping.close()
            raise ValueError(f"{folder / BOARD_FILE} is not a gateway board")
        return cls(folder, rows, slots, mapping)

    def close(self) -> None:
        self._cells.release()
        self._ints.release()
        self._map.close()
        os.close(self._lock_fd)

    def lock(self) -> _Lock:
        """The board's lock, across processes (held for microseconds; blocks briefly)."""
        return self._lock

    # the directory

    def slot(self, name: str) -> int:
        """``name``'s slot, registered on first use (the same on every worker)."""
        found = self._known.get(name)
        if found is not None:
            return found
        key = _encoded(name)
        with self.lock():
            free = -1
            for i in range(self.slots):
                at = self._names_at + i * NAME_BYTES
                entry = self._map[at : at + NAME_BYTES]
                if entry == key:
                    self._known[name] = i
                    return i
                if free < 0 and entry[0] == 0:
                    free = i
            if free < 0:
                raise BoardFull(f"the host board's {self.slots} names are all taken")
            at = self._names_at + free * NAME_BYTES
            self._map[at : at + NAME_BYTES] = key
        self._known[name] = free
        return free

    # rows

    def claim_row(self, pid: int | None = None) -> int:
        """Take a free row (or one whose worker is gone) for process ``pid``, zeroed."""
        pid = os.getpid() if pid is None else pid
        with self.lock():
            for row in range(self.rows):
                owner = self._ints[self._owners_at + row]
                if owner == 0 or not alive(owner):
                    self._zero(row)
                    self._ints[self._owners_at + row] = pid
                    self.row = row
                    return row
        raise BoardFull(f"all {self.rows} rows of the host board belong to live workers")

    def release_row(self) -> None:
        """This worker leaves: its row stops counting."""
        if self.row < 0:
            return
        with self.lock():
            self._zero(self.row)
            self._ints[self._owners_at + self.row] = 0
        self.row = -1

    def owners(self) -> dict[int, int]:
        """Row -> pid of every row in use."""
        found = {}
        for row in range(self.rows):
            pid = self._ints[self._owners_at + row]
            if pid:
                found[row] = pid
        return found

    def sweep(self) -> list[int]:
        """Free the rows of workers that are gone; returns those rows."""
        gone = [row for row, pid in self.owners().items() if not alive(pid)]
        if gone:
            with self.lock():
                for row in gone:
                    pid = self._ints[self._owners_at + row]
                    if pid and not alive(pid):
                        self._zero(row)
                        self._ints[self._owners_at + row] = 0
        return gone

    def _zero(self, row: int) -> None:
        start = self._rows_at + row * self.slots * CELLS
        self._map[start * 8 : (start + self.slots * CELLS) * 8] = bytes(self.slots * CELLS * 8)

    # cells

    def put(self, slot: int, cell: int, value: float) -> None:
        """Write one of this worker's own figures."""
        self._cells[self._rows_at + (self.row * self.slots + slot) * CELLS + cell] = value

    def get(self, row: int, slot: int, cell: int) -> float:
        return self._cells[self._rows_at + (row * self.slots + slot) * CELLS + cell]

    def others(self, slot: int, cell: int) -> float:
        """The sum of a figure over every row but this worker's."""
        stride = self.slots * CELLS
        at = self._rows_at + slot * CELLS + cell
        column = self._cells[at : at + self.rows * stride : stride]
        mine = column[self.row] if self.row >= 0 else 0.0
        return float(sum(column)) - mine

    def shared(self, slot: int, cell: int) -> float:
        return self._cells[self._shared_at + slot * SHARED + cell]

    def put_shared(self, slot: int, cell: int, value: float) -> None:
        """Change a shared figure (under ``lock`` when it is read and changed together)."""
        self._cells[self._shared_at + slot * SHARED + cell] = value
