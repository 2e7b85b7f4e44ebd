"""The load tests' shape, checked: folders by role, one folder per benchmark with its own
command, files a benchmark writes only under its ``results/``, small documented modules, and
no lab scripts left in ``tests/``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LOADTESTS = ROOT / "loadtests"
MAX_LINES = 400
# Folders of loadtests/ that are not benchmarks, and the files they hold besides modules.
ROLES = {"sim", "loadgen", "real", "kit", "fit", "workloads"}
DATA = {".yaml", ".jsonl"}  # inputs: profiles, fleets, workloads, written data sets


def _modules() -> list[Path]:
    return sorted(LOADTESTS.rglob("*.py"))


def _files() -> list[Path]:
    return sorted(p for p in LOADTESTS.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def _folders() -> list[Path]:
    return sorted(p for p in LOADTESTS.iterdir() if p.is_dir() and p.name != "__pycache__")


BENCHMARKS = [p for p in _folders() if p.name not in ROLES]
FITS = sorted(p for p in (LOADTESTS / "fit").iterdir() if p.is_dir() and p.name != "__pycache__")


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_modules_are_small_and_say_what_they_are(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    assert len(source.splitlines()) <= MAX_LINES
    assert ast.get_docstring(ast.parse(source)), "a module opens with its docstring"


def test_no_module_at_the_top_but_the_package() -> None:
    assert [p.name for p in LOADTESTS.glob("*.py")] == ["__init__.py"]
    assert len(BENCHMARKS) >= 16


@pytest.mark.parametrize(
    "folder", [*BENCHMARKS, *FITS], ids=lambda p: str(p.relative_to(LOADTESTS))
)
def test_every_command_is_a_folder_with_its_main(folder: Path) -> None:
    """``python -m loadtests.<name>`` runs ``<name>/cli.py``'s ``main``."""
    for name in ("__init__.py", "__main__.py", "cli.py"):
        assert (folder / name).is_file(), name
    package = ".".join(folder.relative_to(ROOT).parts)
    main = (folder / "__main__.py").read_text(encoding="utf-8")
    assert f"from {package}.cli import main" in main


def _placed(path: Path) -> bool:
    """A benchmark's output sits under ``loadtests/<benchmark>/results/``; anything else is a
    module or an input (a profile, a fleet, a workload, a written data set)."""
    parts = path.relative_to(LOADTESTS).parts
    if len(parts) > 2 and parts[1] == "results":
        return parts[0] not in ROLES
    return "results" not in parts and (path.suffix == ".py" or path.suffix in DATA)


def test_results_are_only_under_a_benchmarks_results_folder() -> None:
    assert [p for p in _files() if not _placed(p)] == []


def test_no_command_writes_outside_its_results_by_default() -> None:
    """The old shared output folder is gone from every command's defaults."""
    offenders = [p for p in _modules() if "reports/out" in p.read_text(encoding="utf-8")]
    assert offenders == []


def _runs_as_script(path: Path) -> bool:
    """Whether the module has a top-level ``if __name__ == "__main__":`` block."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Compare):
            names = [node.test.left, *node.test.comparators]
            if any(isinstance(n, ast.Name) and n.id == "__name__" for n in names):
                return True
    return False


def test_tests_hold_no_lab_scripts() -> None:
    """Commands live in loadtests/: nothing under tests/ runs as a script."""
    tests = ROOT / "tests"
    assert [p for p in sorted(tests.rglob("*.py")) if _runs_as_script(p)] == []
    assert not list(tests.rglob("__main__.py"))
