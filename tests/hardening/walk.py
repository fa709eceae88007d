"""What a hostile run may not do: change anything outside the folders prebake owns.

``Tree.of(root, allowed)`` records every path under ``root`` (type, size, mtime) except those
under ``allowed`` folders; comparing two records lists what a run created, deleted or changed.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Tree:
    entries: dict[str, tuple[str, int, int]]

    @classmethod
    def of(cls, root: Path, allowed: Iterable[Path] = ()) -> Tree:
        skip = {os.path.realpath(p) for p in allowed}
        out: dict[str, tuple[str, int, int]] = {}
        todo = [os.path.realpath(root)]
        while todo:
            d = todo.pop()
            with os.scandir(d) as it:
                for e in it:
                    if e.path in skip:
                        continue
                    st = e.stat(follow_symlinks=False)
                    kind = "link" if e.is_symlink() else "dir" if e.is_dir() else "file"
                    out[os.path.relpath(e.path, root)] = (
                        kind, st.st_size if kind == "file" else 0,
                        st.st_mtime_ns if kind == "file" else 0)
                    if kind == "dir":
                        todo.append(e.path)
        return cls(out)

    def changes(self, after: Tree) -> list[str]:
        a, b = self.entries, after.entries
        return sorted([f"created {p}" for p in b.keys() - a.keys()]
                      + [f"deleted {p}" for p in a.keys() - b.keys()]
                      + [f"changed {p}" for p in a.keys() & b.keys() if a[p] != b[p]])
