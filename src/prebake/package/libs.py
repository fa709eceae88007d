"""How an asset's libraries are described to the guards and the CMake and pkg-config
generators: which of a recipe's outputs are libraries, of which kind, and each DLL with its
import libraries (the Windows layout: ``prebake.package.windows``)."""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from prebake.package import windows


@dataclass(frozen=True)
class Library:
    """One library of an asset, paths relative to the asset's root (posix)."""

    path: str  # lib/libfoo.a, lib/libonnxruntime.so.1, bin/foo.dll
    kind: str  # "static" | "shared"
    # a DLL's import libraries, in lib/: the MSVC one (lib/foo.lib) first, then MinGW's
    # (lib/libfoo.dll.a)
    implibs: tuple[str, ...] = ()

    @property
    def stem(self) -> str:
        """``lib/libfoo.so.1.2`` -> ``foo``; ``lib/foo.lib`` -> ``foo``; a DLL is named by its
        import library (``bin/avcodec-61.dll`` with ``lib/libavcodec.dll.a`` -> ``avcodec``)."""
        name = (self.implibs or (self.path,))[0].rsplit("/", 1)[-1]
        name = re.sub(r"(\.so(\.\d+)*|\.dll\.a|\.a|\.lib|\.dll|\.dylib|\.\d+(\.\d+)*\.dylib)$",
                      "", name)
        return name[3:] if name.startswith("lib") and len(name) > 3 else name

    @property
    def files(self) -> tuple[str, ...]:
        """Every file of this library the asset ships: the library, then its import libraries."""
        return (self.path, *self.implibs)

    @property
    def msvc_implib(self) -> str | None:
        return next((i for i in self.implibs if not windows.is_mingw_implib(i)), None)

    @property
    def mingw_implib(self) -> str | None:
        return next((i for i in self.implibs if windows.is_mingw_implib(i)), None)

    @property
    def link_path(self) -> str:
        """What a consumer's linker is given: a DLL's import library (MinGW's where there is
        one: prebake's Windows toolchains are GNU ones, mingw-w64 and zig), else the library."""
        return self.mingw_implib or self.msvc_implib or self.path


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


def _kind_of(rel: str, declared: str) -> str:
    name = rel.rsplit("/", 1)[-1]
    if name.endswith((".so", ".dylib", ".dll")) or ".so." in name:
        return "shared"
    if name.endswith(".a"):
        return "static"
    return declared


def libraries(outputs: Sequence[str], declared: str, prefix: Path, *, os: str,
              added: Collection[str] = ()) -> tuple[list[Library], list[str]]:
    """``(libraries, problems)``: a recipe's declared library ``outputs`` (present in
    ``prefix``) as libraries of their kind (``declared``, the recipe's, where the name does
    not say), each DLL carrying its import libraries. For Windows, ``problems`` names what
    breaks the layout of ``prebake.package.windows``, among the outputs and among the files
    the build ``added`` to the prefix."""
    if os != "windows":
        return [Library(rel, _kind_of(rel, declared)) for rel in outputs], []
    pairing = windows.pair(outputs, prefix)
    listed = set(outputs)
    problems = pairing.problems + windows.misplaced(f for f in added if f not in listed)
    libs = [Library(rel, "shared", implibs) for rel, implibs in pairing.dlls.items()]
    libs += [Library(rel, _kind_of(rel, declared)) for rel in pairing.others]
    order = {rel: i for i, rel in enumerate(outputs)}  # the outputs' own order
    return sorted(libs, key=lambda lib: order[lib.path]), problems
