"""Line numbers for recipe fields (``RECIPE.sources[0].sha256``), read from the file's syntax tree.

A recipe is Python, so a problem found in the loaded data is mapped back to source by walking
the ``RECIPE = Recipe(...)`` call: keyword arguments by name, tuples/lists by index, dicts by
literal key. Where the value is computed (a comprehension, a helper call) the walk stops and the
line of the deepest node found is used: it still points at the right place.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

_STEP = re.compile(r"\.(\w+)|\[(\d+)\]|\[('[^']*'|\"[^\"]*\")\]")


def _steps(field_path: str) -> list[str | int]:
    steps: list[str | int] = []
    for attr, index, key in _STEP.findall(field_path):
        if attr:
            steps.append(attr)
        elif index:
            steps.append(int(index))
        else:
            steps.append("=" + key[1:-1])  # a dict key, told apart from an attribute
    return steps


def _recipe_call(tree: ast.Module) -> ast.expr | None:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "RECIPE" for t in node.targets):
            return node.value
    return None


def _resolve_name(tree: ast.Module, node: ast.expr) -> ast.expr:
    """``sources=SOURCES`` where ``SOURCES = (...)`` is a module-level constant: follow it."""
    if isinstance(node, ast.Name):
        for stmt in tree.body:
            if isinstance(stmt, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == node.id for t in stmt.targets):
                return stmt.value
    return node


def _child(tree: ast.Module, node: ast.expr, step: str | int) -> ast.expr | None:
    node = _resolve_name(tree, node)
    if isinstance(step, int) and isinstance(node, ast.Tuple | ast.List):
        return node.elts[step] if step < len(node.elts) else None
    if isinstance(step, str) and step.startswith("=") and isinstance(node, ast.Dict):
        for k, v in zip(node.keys, node.values, strict=True):
            if isinstance(k, ast.Constant) and k.value == step[1:]:
                return v
        return None
    if isinstance(step, str) and isinstance(node, ast.Call):
        for kw in node.keywords:
            if kw.arg == step:
                return kw.value
    return None


def field_line(path: Path, field_path: str) -> int | None:
    """The line of ``field_path`` (e.g. ``.sources[0].sha256``) in the recipe file ``path``."""
    try:
        tree = ast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return None
    node = _recipe_call(tree)
    if node is None:
        return None
    line = node.lineno
    for step in _steps(field_path):
        nxt = _child(tree, node, step)
        if nxt is None:
            break
        node, line = nxt, nxt.lineno
    return line
