"""The code's shape, checked: one-way layers between gateway's packages (no cycle between
packages, every import downwards in ``LAYERS``), no cycle between modules, the request path's
stages in one package under one contract, the HTTP edge above it, domain packages below it
that know nothing of HTTP, no module name used twice, small modules, and a product that never
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
# The stages in the order they run; each is a module of gateway/path. Identification makes
# the request's context, reporting records however it ended; the rest run in ``run.STAGES``.
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
RUN = STAGES[1:-1]
# gateway/path holds the stages, their contract (``flow``), the request's facts (``context``),
# the order (``run``) and one exchange with a replica (``exchange/``), nothing else.
PATH_EXTRAS = ("__init__", "context", "flow", "run", "exchange")
DOMAIN = ("admission", "backends", "cache", "classify", "embedding", "rewrite", "scheduling",
          "upstream", "policy", "security", "cluster", "tracing", "schema",
          "dashboard", "recovery")  # fmt: skip
# gateway's packages and top-level modules, top layer first: an import goes to its own layer
# or a lower one, never up (and, within a layer, ``test_no_cycle_between_packages`` holds).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("__main__", "commands"),  # the command line
    ("app",),  # the Starlette app and its lifespan
    ("edge",),  # HTTP handlers: routes, admin, dashboard, OpenAPI, error rendering
    ("runtime",),  # the running gateway's parts, and its own requests
    ("path",),  # the request path's stages
    ("cluster", "scheduling", "admission", "backends", "recovery"),  # the fleet: who, when
    ("policy",),  # compile, load, reload
    ("cache", "rewrite", "classify", "security", "upstream", "embedding", "tracing",
     "dashboard", "retry_budget", "host"),  # what one request needs, algorithm by algorithm
    ("openai", "schema", "errors", "metrics", "metric_labels", "loop_metrics", "access_log",
     "children", "ttl_lru", "gateway"),  # vocabulary: API, policy schema, errors, instruments
)  # fmt: skip


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules_of(root: Path) -> dict[str, Path]:
    return {module_name(p, root): p for p in root.rglob("*.py")}


MODULES = modules_of(ROOT)


def imported(path: Path, root: Path = ROOT) -> Iterator[str]:
    """Every module name an import statement of ``path`` names (absolute or relative)."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
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


def gateway_deps(path: Path, modules: dict[str, Path] = MODULES, root: Path = ROOT) -> set[str]:
    """The modules of ``modules`` that ``path`` imports (a name imported from a module counts
    as that module; a submodule imported from a package as the submodule)."""
    deps = set()
    for name in imported(path, root):
        while name and name not in modules:
            name = name.rpartition(".")[0]
        if name and name != module_name(path, root):
            deps.add(name)
    return deps


def package_of(module: str) -> str:
    """The top-level package (or module) of ``root`` a module belongs to."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def package_graph(root: Path) -> dict[str, set[str]]:
    """Which of ``root``'s top-level packages and modules import which others."""
    modules = modules_of(root)
    graph: dict[str, set[str]] = {package_of(name): set() for name in modules}
    for name, path in modules.items():
        for dep in gateway_deps(path, modules, root):
            if package_of(dep) != package_of(name):
                graph[package_of(name)].add(package_of(dep))
    return graph


def upward_imports(graph: dict[str, set[str]], layers: tuple[tuple[str, ...], ...]) -> list[str]:
    """Imports that go to a higher layer than their importer's (or from or to a package that
    no layer names)."""
    level = {name: n for n, layer in enumerate(layers) for name in layer}
    return sorted(
        f"{a} -> {b}"
        for a, deps in graph.items()
        for b in deps
        if a not in level or b not in level or level[b] < level[a]
    )


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


def test_no_cycle_between_packages() -> None:
    assert cycles(package_graph(ROOT)) == []


def test_every_import_goes_down_the_layers() -> None:
    assert upward_imports(package_graph(ROOT), LAYERS) == []


def _plant(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root / "pkg"


def test_a_planted_cycle_between_packages_is_found(tmp_path: Path) -> None:
    """Two packages that import each other through different modules (no module cycle), one
    of the imports deferred: the package graph still has the circle."""
    root = _plant(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/low/__init__.py": "",
            "pkg/low/a.py": "def f():\n    from pkg.high import b\n",
            "pkg/high/__init__.py": "",
            "pkg/high/b.py": "",
            "pkg/high/c.py": "from pkg.low.a import f\n",
        },
    )
    graph = package_graph(root)
    modules = modules_of(root)
    module_graph = {name: gateway_deps(path, modules, root) for name, path in modules.items()}
    assert cycles(module_graph) == []
    assert cycles(graph) == [["high", "low"]]
    assert upward_imports(graph, (("high",), ("low",))) == ["low -> high"]


def test_no_module_name_is_used_twice() -> None:
    """A module's file name says what it holds, once: no two modules share one."""
    seen: dict[str, list[str]] = {}
    for name, path in MODULES.items():
        if path.name not in ("__init__.py", "__main__.py"):
            seen.setdefault(path.stem, []).append(name)
    assert {stem: names for stem, names in seen.items() if len(names) > 1} == {}


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


def test_the_path_package_holds_stages_and_their_contract_only() -> None:
    entries = {p.stem for p in (ROOT / "path").iterdir() if p.suffix == ".py" or p.is_dir()}
    assert entries - {*STAGES, *PATH_EXTRAS} - {"__pycache__"} == set()


def test_the_run_order_is_the_stages_under_one_contract() -> None:
    from gateway.path.run import STAGES as RUN_STAGES

    assert [stage.__name__ for _, stage in RUN_STAGES] == [f"{s}_stage" for s in RUN]


@pytest.mark.parametrize("package", DOMAIN)
def test_domain_packages_know_nothing_of_http_or_the_path(package: str) -> None:
    above = ("starlette", "gateway.edge", "gateway.path", "gateway.runtime", "gateway.app")
    offenders = {
        f"{name} imports {dep}"
        for name, path in MODULES.items()
        if name.startswith(f"gateway.{package}.") or name == f"gateway.{package}"
        for dep in imported(path)
        if dep.startswith(above)
    }
    assert offenders == set()
