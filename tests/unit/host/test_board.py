"""The host board: names, rows and figures shared by processes through one mapped file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gateway.host.board import Board, BoardFull, alive

# A second process: attach, claim a row, write a figure of backend b0, print its row, exit.
CHILD = """
import sys
from pathlib import Path
from gateway.host.board import Board
board = Board.attach(Path(sys.argv[1]))
row = board.claim_row()
board.put(board.slot("b:b0"), 0, 5.0)
print(row, flush=True)
"""


def test_a_name_has_the_same_slot_on_every_attachment(tmp_path: Path) -> None:
    first = Board.create(tmp_path, rows=2, slots=8)
    second = Board.attach(tmp_path)
    assert (second.rows, second.slots) == (2, 8)
    assert first.slot("b:a") == second.slot("b:a")
    assert second.slot("p:pool") == first.slot("p:pool") != first.slot("b:a")
    # A name longer than an entry is stored as its digest, still one slot.
    long = "t:" + "x" * 200
    assert first.slot(long) == second.slot(long)


def test_each_worker_writes_its_row_and_reads_the_others(tmp_path: Path) -> None:
    a = Board.create(tmp_path, rows=3, slots=4)
    b, c = Board.attach(tmp_path), Board.attach(tmp_path)
    rows = {board.claim_row(pid) for board, pid in ((a, 1), (b, 1), (c, 1))}
    assert rows == {0, 1, 2}
    slot = a.slot("b:x")
    a.put(slot, 0, 2.0)
    b.put(slot, 0, 3.0)
    c.put(slot, 1, 7.0)
    assert (a.others(slot, 0), b.others(slot, 0), c.others(slot, 0)) == (3.0, 2.0, 5.0)
    assert a.others(slot, 1) == 7.0
    b.release_row()
    assert a.others(slot, 0) == 0.0  # what a leaving worker held stops counting


def test_a_full_directory_and_full_rows_are_refused(tmp_path: Path) -> None:
    board = Board.create(tmp_path, rows=1, slots=2)
    board.slot("a")
    board.slot("b")
    with pytest.raises(BoardFull, match="names"):
        board.slot("c")
    board.claim_row()  # this process, alive
    with pytest.raises(BoardFull, match="rows"):
        Board.attach(tmp_path).claim_row()


def test_another_process_shows_its_figures_and_its_row_is_freed_when_it_is_gone(
    tmp_path: Path,
) -> None:
    board = Board.create(tmp_path, rows=2, slots=8)
    row = board.claim_row()
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[3],
    )
    child_row = int(child.stdout)
    assert child_row != row
    slot = board.slot("b:b0")
    assert board.get(child_row, slot, 0) == 5.0
    # The child has exited: its row still counts until a sweep frees it.
    assert board.others(slot, 0) == 5.0
    assert board.sweep() == [child_row]
    assert board.others(slot, 0) == 0.0
    assert child_row not in board.owners()
    assert board.sweep() == []


def test_alive_knows_the_living_from_the_gone() -> None:
    import os

    assert alive(os.getpid())
    assert not alive(0)
    done = subprocess.run([sys.executable, "-c", "pass"], check=True)
    assert done.returncode == 0
    # A pid that exited (reaped by run) is gone, unless the system reused it at once.
    assert not alive(2**22 + 12345)


def test_shared_cells_are_one_value_for_all(tmp_path: Path) -> None:
    a = Board.create(tmp_path, rows=2, slots=4)
    b = Board.attach(tmp_path)
    slot = a.slot("r:t")
    with a.lock():
        a.put_shared(slot, 0, 9.5)
    assert b.shared(slot, 0) == 9.5


def test_attach_refuses_a_file_that_is_no_board(tmp_path: Path) -> None:
    (tmp_path / "board").write_bytes(bytes(64))
    with pytest.raises(ValueError, match="not a gateway board"):
        Board.attach(tmp_path)
