"""The depth bound every tree prebake reads or unpacks keeps, and an iterative walk.

Python's recursive helpers (``shutil.copytree``/``rmtree``, ``Path.rglob``, a recursive
``scandir``) die with ``RecursionError`` somewhere past 400-1000 nested folders. No source tree
or asset needs more than a few dozen levels, so prebake refuses more than ``MAX_DEPTH`` where a
tree enters (an archive member's name, a local source folder) with one clear line, and walks
iteratively where it walks.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

from prebake.errors import PrebakeError

#: folders below a root; far beyond real trees, far below what recursive stdlib helpers survive
MAX_DEPTH = 256


class TooDeep(PrebakeError):
    """A tree nests more folders than ``MAX_DEPTH`` (exit code 2)."""


def scandir_tree(root: str, *, skip: Callable[[os.DirEntry[str]], bool] | None = None,
                 max_depth: int = MAX_DEPTH) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """``(relative path, entry)`` for everything under ``root``, without recursion; folders are
    descended unless ``skip(entry)``; symlinks are never followed. Raises ``TooDeep``."""
    todo: list[tuple[str, str, int]] = [(root, "", 0)]
    while todo:
        folder, prefix, depth = todo.pop()
        with os.scandir(folder) as it:
            for entry in it:
                rel = prefix + entry.name
                yield rel, entry
                if entry.is_dir(follow_symlinks=False) and not (skip and skip(entry)):
                    if depth + 1 > max_depth:
                        raise TooDeep(f"{root}: more than {max_depth} nested folders "
                                      f"(at {rel[:60]}…); refusing a tree this deep")
                    todo.append((entry.path, rel + "/", depth + 1))
