"""What a recipe ships, as the guards see it: its declared libraries (globs expanded) and every
other binary its build put into the prefix.

``Outputs.libs`` entries may be globs (``"lib/libabsl_*.a"``): each must match at least one
file, and the matches, sorted, are the recipe's libraries. A library the recipe did not list
still ships in the asset, so it is guarded all the same: every binary the recipe's build added
to the prefix (found by ``prebake.inspect.resolve``, anywhere in the prefix) is inspected and
checked against the contract, and every such library is linked whole.
"""

from __future__ import annotations

import fnmatch
import re
import tempfile
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

from prebake.inspect.resolve import resolve
from prebake.recipes.api import Recipe

_GLOB = re.compile(r"[*?\[]")
LIBRARY_NAME = re.compile(r"\.(a|lib|so(\.\d+)*|dylib|dll)$")


def is_glob(entry: str) -> bool:
    return bool(_GLOB.search(entry))


def prefix_files(prefix: Path) -> list[str]:
    """Every file and symlink below ``prefix``, relative, sorted (folders left out)."""
    if not prefix.is_dir():
        return []
    return sorted(p.relative_to(prefix).as_posix() for p in prefix.rglob("*")
                  if p.is_symlink() or p.is_file())


def expand(entries: Sequence[str], prefix: Path, files: Sequence[str] | None = None
           ) -> tuple[list[str], list[str]]:
    """``(paths, missing)``: each plain entry that exists, each glob's matches (a glob matching
    nothing is missing, like an absent plain path)."""
    present = prefix_files(prefix) if files is None else list(files)
    out: list[str] = []
    missing: list[str] = []
    for entry in entries:
        if is_glob(entry):
            hits = [f for f in present if fnmatch.fnmatchcase(f, entry)]
            if not hits:
                missing.append(entry)
            out.extend(h for h in hits if h not in out)
        elif (prefix / entry).exists() or (prefix / entry).is_symlink():
            if entry not in out:
                out.append(entry)
        else:
            missing.append(entry)
    return out, missing


def dep_libraries(recipes: Mapping[str, Recipe], recipe: Recipe, platform: str,
                  deps: Path) -> list[Path]:
    """The libraries of the recipes ``recipe`` declares as deps, as installed in ``deps``."""
    files = prefix_files(deps)
    out: list[Path] = []
    for d in recipe.deps:
        if d in recipes:
            found, _missing = expand(recipes[d].outputs.libs_for(platform), deps, files)
            out.extend(deps / rel for rel in found)
    return out


def unlisted_binaries(prefix: Path, declared: Collection[str], before: Collection[str]
                      ) -> tuple[list[str], list[str]]:
    """``(binaries, escapes)``: binaries the recipe's build added to ``prefix`` that
    ``declared`` does not name (relative paths, each real file once: a symlink to a declared
    library is that library), and the symlinks it added that leave the prefix."""
    declared_real = {(prefix / d).resolve() for d in declared}
    base = str(prefix) + "/"
    with tempfile.TemporaryDirectory(prefix="prebake-shipped-") as tmp:
        found = resolve([prefix], Path(tmp))
        rels = [b.rel for b in found.binaries if b.shown == str(prefix / b.rel)]
    escapes = [e.removeprefix(base) for e in found.escapes]
    return ([r for r in rels if r not in before and r not in declared
             and (prefix / r).resolve() not in declared_real],
            [e for e in escapes if e.split(" -> ")[0] not in before])
