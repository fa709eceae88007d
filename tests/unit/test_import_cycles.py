"""No import cycles between prebake's modules.

Every ``import``/``from … import`` in every module counts — at module level, inside functions
(the lazy imports that keep start-up fast) and under ``if TYPE_CHECKING:`` — because a cycle
hidden in a function still ties two modules into one that cannot be understood or tested
alone. ``from pkg import name`` is an edge to ``pkg.name`` when that is a module, else to
``pkg`` itself; a parent package's ``__init__`` that Python runs on the way is not an edge.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

from prebake.link.order import strongly_connected

SRC = Path(__file__).resolve().parents[2] / "src"


def modules(src: Path, top: str) -> dict[str, Path]:
    """Module name -> file; a compiled extension counts by its stub (``inspect/_scan.pyi``),
    so importing it is an edge to it, not to the package around it."""
    out = {}
    stubs = [p for p in (src / top).rglob("*.pyi") if not p.with_suffix(".py").exists()]
    for p in sorted([*(src / top).rglob("*.py"), *stubs]):
        parts = list(p.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = p
    return out


def _targets(node: ast.AST, name: str, is_pkg: bool) -> Iterator[str]:
    if isinstance(node, ast.Import):
        yield from (a.name for a in node.names)
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            pkg = name.split(".") if is_pkg else name.split(".")[:-1]
            pkg = pkg[: len(pkg) - node.level + 1]
            base = ".".join([*pkg, *([node.module] if node.module else [])])
        for a in node.names:
            yield f"{base}.{a.name}"
            yield base


@functools.cache
def import_graph(src: Path, top: str) -> dict[str, set[str]]:
    """Module -> the modules of ``top`` it imports anywhere in its body."""
    mods = modules(src, top)
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
            candidates = list(_targets(node, name, path.name == "__init__.py"))
            if isinstance(node, ast.ImportFrom):
                # ``from a.b import c``: the submodule a.b.c if it exists, else a.b
                pairs = zip(candidates[::2], candidates[1::2], strict=True)
                candidates = [sub if sub in mods else base for sub, base in pairs]
            for t in candidates:
                while t not in mods and "." in t:
                    t = t.rsplit(".", 1)[0]
                if t in mods and t != name:
                    graph[name].add(t)
    return graph


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (the link-order Tarjan)."""
    return sorted(sorted(c) for c in strongly_connected(sorted(graph), graph) if len(c) > 1)


def package_graph(graph: Mapping[str, set[str]]) -> dict[str, set[str]]:
    """``prebake.x.y`` -> ``prebake.x``: which of prebake's packages use which."""
    def pkg(m: str) -> str:
        return ".".join(m.split(".")[:2])

    out: dict[str, set[str]] = {}
    for a, targets in graph.items():
        out.setdefault(pkg(a), set()).update(pkg(b) for b in targets if pkg(b) != pkg(a))
    return out


def test_prebake_has_no_import_cycles() -> None:
    graph = import_graph(SRC, "prebake")
    assert len(graph) > 100 and graph["prebake.bake.unit"], "the walk found the modules"
    assert cycles(graph) == []


def with_package_inits(graph: Mapping[str, set[str]]) -> dict[str, set[str]]:
    """``graph`` plus an edge to every package ``__init__`` Python runs on the way to a target
    (``a`` importing ``p.q.m`` runs ``p`` and ``p.q`` first), except ``a``'s own packages."""
    out = {a: set(ts) for a, ts in graph.items()}
    for a, targets in graph.items():
        for t in targets:
            parts = t.split(".")
            out[a].update(p for p in (".".join(parts[:i]) for i in range(2, len(parts)))
                          if p in graph and p != a and not a.startswith(p + "."))
    return out


def test_no_cycle_through_a_package_init_run_on_the_way() -> None:
    """With imports at module top (tests/unit/test_lazy_imports.py), a package ``__init__``
    that re-exports is part of every import of its modules: ``toolchain.environment`` taking a
    helper from ``workspace.model`` ran ``workspace/__init__``, whose loader imports
    ``toolchain.environment`` (a partially initialised module at run time)."""
    assert cycles(with_package_inits(import_graph(SRC, "prebake"))) == []


def test_no_two_packages_depend_on_each_other() -> None:
    """Between packages the arrows form no cycle at all, a mutual pair included: packaging and
    stores share the file hash (prebake.digest), not each other; the clash rule builds contract
    violations, so it lives with the contract; the inputs share values in prebake.model."""
    pg = package_graph(import_graph(SRC, "prebake"))
    assert "prebake.store" in pg["prebake.package"] or "prebake.package" in pg["prebake.store"]
    assert cycles(pg) == []


INPUTS = ("prebake.recipes", "prebake.sources", "prebake.toolchain", "prebake.workspace")


def test_the_inputs_share_values_not_each_other() -> None:
    """Recipes, sources, toolchains and the workspace once imported each other in 9 of their 12
    directed pairs. What they share is a value one floor down (prebake.model); the loader that
    reads them together (prebake.intake) is one floor up; none of them imports another."""
    graph = import_graph(SRC, "prebake")
    assert graph["prebake.sources.lock"] and graph["prebake.toolchain.verify"], "walk found them"
    crossing = sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets
                      if a.startswith(INPUTS) and b.startswith(INPUTS)
                      and a.split(".")[1] != b.split(".")[1])
    assert crossing == [], crossing


def test_a_cycle_through_a_function_level_import_is_found(tmp_path: Path) -> None:
    pkg = tmp_path / "demo"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from demo.sub import b\n")
    (pkg / "a.py").write_text("from typing import TYPE_CHECKING\n"
                              "if TYPE_CHECKING:\n    from demo.sub.b import B\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from .. import a\n    return a\n")
    (pkg / "c.py").write_text("import demo.a\n")
    graph = import_graph(tmp_path, "demo")
    assert graph["demo.sub"] == {"demo.sub.b"} and graph["demo.c"] == {"demo.a"}
    assert cycles(graph) == [["demo.a", "demo.sub.b"]]


def _floors() -> dict[str, int]:
    """``prebake.x`` -> its row in docs/architecture.md's table of packages, ground first."""
    text = (SRC.parent / "docs" / "architecture.md").read_text("utf-8")
    table = text.split("| floor | package | holds |", 1)[1].split("\n\n", 1)[0]
    rows = [line.split("|")[2] for line in table.splitlines()[2:] if line.startswith("|")]
    return {f"prebake.{name}": i for i, cell in enumerate(rows)
            for name in re.findall(r"`([a-z_]+)`", cell)}


def test_every_import_points_down_the_floors_of_the_architecture_page() -> None:
    """Each package imports only from its own row of docs/architecture.md's table and the rows
    above it (the map is the rule); a package the table does not place fails too."""
    floors = _floors()
    assert floors["prebake.errors"] == 0 < floors["prebake.inspect"] < floors["prebake.commands"]
    graph = import_graph(SRC, "prebake")

    def pkg(m: str) -> str:
        return ".".join(m.split(".")[:2])

    unplaced = sorted({pkg(m) for m in graph} - set(floors) - {"prebake", "prebake.__main__"})
    assert unplaced == [], f"place these in docs/architecture.md's table: {unplaced}"
    up = sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets
                if pkg(a) in floors and pkg(b) in floors and floors[pkg(b)] > floors[pkg(a)])
    assert up == [], up
