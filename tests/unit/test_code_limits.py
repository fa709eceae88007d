"""The counts a maintainer reads prebake's code by, held by a walk of the syntax trees under
src/prebake: the build's chain stays one short module, module names say which module they are,
package faces only hand names on, and the variables a build may inherit are listed once."""

from __future__ import annotations

import ast
import fnmatch
from collections import defaultdict
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "prebake"

UNIT_MAX_LINES = 400  # bake/unit.py: the chain of a unit's steps, nothing else
SHARED_NAMES_MAX = 7  # module names two files bear (commands/NAME.py is named for its command)
FACE_MAX_LINES = 60  # a package's __init__.py
FACES = ("__init__", "__main__")


def _modules() -> dict[Path, ast.Module]:
    return {p: ast.parse(p.read_text("utf-8"), str(p)) for p in sorted(SRC.rglob("*.py"))}


def test_the_build_chain_module_stays_short() -> None:
    lines = len((SRC / "bake" / "unit.py").read_text("utf-8").splitlines())
    assert lines <= UNIT_MAX_LINES, (
        f"bake/unit.py has {lines} lines: what a step hands off belongs in the module it hands "
        "it to (docs/architecture.md, 'prebake build, step by step')")


def test_few_module_names_are_borne_by_two_files() -> None:
    by_name: dict[str, list[str]] = defaultdict(list)
    for path in _modules():
        rel = path.relative_to(SRC).as_posix()
        # a shipped recipe's folder holds its recipe.py by design (docs/architecture.md)
        if path.stem not in FACES and not fnmatch.fnmatch(rel, "recipes/builtin/*/recipe.py"):
            by_name[path.stem].append(rel)
    shared = {name: paths for name, paths in by_name.items() if len(paths) > 1}
    assert len(shared) <= SHARED_NAMES_MAX, f"{len(shared)} names are shared: {shared}"


def test_package_faces_are_short_and_only_hand_names_on() -> None:
    """An ``__init__.py`` holds its docstring, imports, ``__all__`` and constants: no function,
    class or statement that does something (the logic sits in a module named for it)."""
    for path, tree in _modules().items():
        if path.name != "__init__.py":
            continue
        rel = path.relative_to(SRC).as_posix()
        lines = len(path.read_text("utf-8").splitlines())
        assert lines <= FACE_MAX_LINES, f"{rel}: {lines} lines"
        logic = [f"{rel}:{n.lineno} {type(n).__name__}" for n in tree.body
                 if not isinstance(n, ast.Import | ast.ImportFrom | ast.Expr | ast.Assign
                                   | ast.AnnAssign)]
        assert logic == [], logic


# environments that start no compiler, build command, probe or consumer link
OTHER_ENVIRONMENTS = {"trust/sign.py": "ssh-keygen's: an agent socket no build may see"}


def test_the_variables_a_build_inherits_are_listed_once() -> None:
    """One allow-list (``prebake.variables.ALLOWLIST``) for every compiler, build command,
    probe and consumer link: no other module writes a list of variable names that lets
    ``PATH`` and ``HOME`` through on its own."""
    found = []
    for path, tree in _modules().items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Tuple | ast.List | ast.Set):
                names = {e.value for e in node.elts if isinstance(e, ast.Constant)}
                if {"PATH", "HOME"} <= names:
                    found.append(path.relative_to(SRC).as_posix())
    assert sorted(set(found) - set(OTHER_ENVIRONMENTS)) == ["variables.py"], found


def test_the_counts_would_see_a_second_face_with_logic(tmp_path: Path) -> None:
    """The face check reads what a module does, not its name."""
    tree = ast.parse('"""doc"""\nfrom x import y\n__all__ = ["y"]\ndef helper():\n    pass\n')
    kinds = [type(n).__name__ for n in tree.body
             if not isinstance(n, ast.Import | ast.ImportFrom | ast.Expr | ast.Assign
                               | ast.AnnAssign)]
    assert kinds == ["FunctionDef"]
