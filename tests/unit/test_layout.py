"""The code's shape, checked: the request path's stages in one package, the HTTP edge in
another, domain packages below them, no import cycle, small modules, and a product that never
imports its own load tests. Imports are read from the source (every ``import`` statement,
inside functions and ``TYPE_CHECKING`` blocks too: a deferred import that dodges a cycle is a
cycle)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "gateway"
MAX_TOP_LEVEL_MODULES = 16
MAX_LINES = 400
# The stages in the order they run; each is a module of gateway/path.
STAGES = (
    "identify",
    "rewrite",
    "cache",
    "plan",
    "compress",
    "admit",
    "dispatch",
    "relay",
    "report",
)
DOMAIN = ("admission", "backends", "cache", "classify", "embedding", "rewrite", "scheduling",
          "upstream", "policy", "security", "cluster", "tracing")  # fmt: skip


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in ROOT.rglob("*.py")}


def imported(path: Path) -> Iterator[str]:
    """Every module name an import statement of ``path`` names (absolute or relative)."""
    package = (
        module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    )
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            # ``from package import submodule`` depends on the submodule; a parent package
            # is always imported first, like it or not, and is no dependency of the code.
            yield from (f"{base}.{alias.name}" for alias in node.names)


def gateway_deps(path: Path) -> set[str]:
    """The gateway modules ``path`` imports (a name imported from a module counts as that
    module; a submodule imported from a package as the submodule)."""
    deps = set()
    for name in imported(path):
        while name and name not in MODULES:
            name = name.rpartition(".")[0]
        if name and name != module_name(path):
            deps.add(name)
    return deps


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return found


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        ({"a": {"b"}, "b": set()}, []),
        ({"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
    ],
)
def test_cycle_finder(graph: dict[str, set[str]], expected: list[list[str]]) -> None:
    assert cycles(graph) == expected


def test_no_import_cycle_between_gateway_modules() -> None:
    graph = {name: gateway_deps(path) for name, path in MODULES.items()}
    assert cycles(graph) == []


def test_top_level_stays_small() -> None:
    top = sorted(p.name for p in ROOT.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, top


def test_no_module_over_the_size_limit() -> None:
    long = {
        name: n for name, p in MODULES.items() if (n := len(p.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}


def test_the_product_never_imports_the_load_tests() -> None:
    offenders = {
        name
        for name, path in MODULES.items()
        if any(dep.split(".")[0] == "loadtests" for dep in imported(path))
    }
    assert offenders == set()


def test_every_stage_has_its_module_in_the_path_package() -> None:
    assert [s for s in STAGES if f"gateway.path.{s}" not in MODULES] == []


@pytest.mark.parametrize("package", DOMAIN)
def test_domain_packages_know_nothing_of_http_or_the_path(package: str) -> None:
    above = ("starlette", "gateway.edge", "gateway.path", "gateway.runtime.parts", "gateway.app")
    offenders = {
        f"{name} imports {dep}"
        for name, path in MODULES.items()
        if name.startswith(f"gateway.{package}.") or name == f"gateway.{package}"
        for dep in imported(path)
        if dep.startswith(above)
    }
    assert offenders == set()
