"""How an asset's libraries are described to the CMake and pkg-config generators."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Library:
    """One library of an asset, paths relative to the asset's root (posix)."""

    path: str  # lib/libfoo.a, lib/libonnxruntime.so.1, bin/foo.dll
    kind: str  # "static" | "shared"
    implib: str | None = None  # Windows import library (lib/foo.lib) for a shared DLL

    @property
    def stem(self) -> str:
        """``lib/libfoo.so.1.2`` -> ``foo``; ``lib/foo.lib`` -> ``foo``."""
        name = self.path.rsplit("/", 1)[-1]
        name = re.sub(r"(\.so(\.\d+)*|\.a|\.lib|\.dll|\.dylib|\.\d+(\.\d+)*\.dylib)$", "", name)
        return name[3:] if name.startswith("lib") and len(name) > 3 else name


def ordered(libs: Sequence[Library], groups: Sequence[Sequence[str]]) -> list[list[Library]]:
    """Libraries arranged in the link order's groups; libraries the order omits come last."""
    by_path = {lib.path: lib for lib in libs}
    out: list[list[Library]] = []
    seen: set[str] = set()
    for g in groups:
        grp = [by_path[p] for p in g if p in by_path and p not in seen]
        seen.update(lib.path for lib in grp)
        if grp:
            out.append(grp)
    out += [[lib] for lib in libs if lib.path not in seen]
    return out
