"""Find and load recipe files: the workspace's ``recipes/`` first, then built-ins.

A recipe is a file ``NAME.py``, or a folder ``NAME/`` whose ``recipe.py`` is the recipe and
which holds whatever else is its own (a deps table, patches, step programs), so one recipe is
one place; a name with both shapes is refused rather than one picked. A recipe file is
executed in a fresh namespace (never imported into ``sys.modules``) and must define ``RECIPE``.
Failures become ``Problem``s naming the file and line, so the workspace loader can report them
together with everything else wrong.
"""

from __future__ import annotations

import dataclasses
import re
import traceback
from pathlib import Path

from prebake.errors import ConfigError, Problem
from prebake.model.recipe import Recipe

BUILTIN_DIR = Path(__file__).resolve().parent / "builtin"
RECIPES_DIR = "recipes"
_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+]*(?:-[A-Za-z_][A-Za-z0-9_.+]*)*$")


FOLDER_RECIPE = "recipe.py"


def _names(folder: Path) -> list[str]:
    files = {p.stem for p in folder.glob("*.py")}
    folders = {p.parent.name for p in folder.glob(f"*/{FOLDER_RECIPE}")}
    return sorted(n for n in files | folders if not n.startswith("_"))


def builtin_names() -> list[str]:
    return _names(BUILTIN_DIR)


def workspace_names(root: Path) -> list[str]:
    return _names(root / RECIPES_DIR)


def _in(folder: Path, name: str) -> Path | None:
    single, whole = folder / f"{name}.py", folder / name / FOLDER_RECIPE
    if single.is_file() and whole.is_file():
        raise ConfigError(str(folder), [Problem(f"{folder}/{name}", f"recipe {name!r} is both "
                                                f"{single.name} and {name}/{FOLDER_RECIPE}: "
                                                "keep one")])
    return single if single.is_file() else whole if whole.is_file() else None


def find_recipe(name: str, root: Path | None = None) -> Path | None:
    """The file defining recipe ``name`` (``NAME.py`` or ``NAME/recipe.py``): the workspace's
    own copy wins over a built-in."""
    if not _NAME_RE.match(name):
        return None
    if root is not None:
        p = _in(root / RECIPES_DIR, name)
        if p is not None:
            return p
    return _in(BUILTIN_DIR, name)


def recipe_name(path: Path) -> str:
    """The name a recipe file stands for: its stem, or its folder's name for ``recipe.py``."""
    return path.parent.name if path.name == FOLDER_RECIPE else path.stem


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
        namespace: dict[str, object] = {"__name__": f"prebake_recipe_{recipe_name(path)}",
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
    if recipe.name != recipe_name(path):
        shape = f"its folder is named {path.parent.name!r}" if path.name == FOLDER_RECIPE \
            else f"the file is named {path.name!r}"
        problems.append(Problem(f"{key}: RECIPE.name", f"is {recipe.name!r} but {shape}"))
    return dataclasses.replace(recipe, path=path), problems


def load_recipe_file(path: Path) -> Recipe:
    """Load one recipe file or raise ``ConfigError`` naming the file."""
    recipe, problems = try_load_recipe(path)
    if problems or recipe is None:
        raise ConfigError(str(path), problems)
    return recipe
