"""Find and load recipe files: the workspace's ``recipes/<name>.py`` first, then built-ins.

A recipe file is executed in a fresh namespace (never imported into ``sys.modules``) and must
define ``RECIPE``. Failures become ``Problem``s naming the file and line, so the workspace
loader can report them together with everything else wrong.
"""

from __future__ import annotations

import dataclasses
import re
import traceback
from pathlib import Path

from prebake.errors import ConfigError, Problem
from prebake.recipes.model import Recipe

BUILTIN_DIR = Path(__file__).resolve().parent / "builtin"
RECIPES_DIR = "recipes"
_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+]*(?:-[A-Za-z_][A-Za-z0-9_.+]*)*$")


def builtin_names() -> list[str]:
    return sorted(p.stem for p in BUILTIN_DIR.glob("*.py") if not p.stem.startswith("_"))


def workspace_names(root: Path) -> list[str]:
    d = root / RECIPES_DIR
    return sorted(p.stem for p in d.glob("*.py") if not p.stem.startswith("_"))


def find_recipe(name: str, root: Path | None = None) -> Path | None:
    """The file defining recipe ``name``: the workspace's own copy wins over a built-in."""
    if not _NAME_RE.match(name):
        return None
    if root is not None:
        p = root / RECIPES_DIR / f"{name}.py"
        if p.is_file():
            return p
    p = BUILTIN_DIR / f"{name}.py"
    return p if p.is_file() else None


def _line_in(exc: BaseException, path: Path) -> int | None:
    if isinstance(exc, SyntaxError) and exc.lineno:
        return exc.lineno
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if Path(frame.filename) == path:
            line = frame.lineno
    return line


def try_load_recipe(path: Path) -> tuple[Recipe | None, list[Problem]]:
    """Execute ``path`` and return its ``RECIPE`` (with ``path`` set), or the problems."""
    path = path.resolve()
    key = str(path)
    try:
        code = compile(path.read_bytes(), key, "exec")
        namespace: dict[str, object] = {"__name__": f"prebake_recipe_{path.stem}",
                                        "__file__": key}
        exec(code, namespace)  # the recipe file is the user's own code, like a setup.py
    except Exception as exc:  # any error in the user's file becomes one located problem
        line = _line_in(exc, path)
        where = f"{key}:{line}" if line else key
        return None, [Problem(where, f"recipe file failed to load: {type(exc).__name__}: {exc}")]
    recipe = namespace.get("RECIPE")
    if not isinstance(recipe, Recipe):
        got = "nothing" if recipe is None else type(recipe).__name__
        return None, [Problem(key, f"must define RECIPE = prebake.recipes.Recipe(...); got {got}")]
    problems = []
    if recipe.name != path.stem:
        problems.append(Problem(f"{key}: RECIPE.name",
                                f"is {recipe.name!r} but the file is named {path.name!r}"))
    return dataclasses.replace(recipe, path=path), problems


def load_recipe_file(path: Path) -> Recipe:
    """Load one recipe file or raise ``ConfigError`` naming the file."""
    recipe, problems = try_load_recipe(path)
    if problems or recipe is None:
        raise ConfigError(str(path), problems)
    return recipe
