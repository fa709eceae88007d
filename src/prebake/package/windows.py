"""Where a Windows asset keeps its libraries, and which import library serves which DLL.

The layout every Windows consumer expects (CMake's ``RUNTIME DESTINATION``, vcpkg, Conan,
MSYS2, FFmpeg's and libtool's own installs): a DLL in ``bin/``, where the loader finds it next
to the program or on ``PATH``; its import libraries in ``lib/``, where the linker looks:
``foo.lib`` for MSVC and clang-cl, ``libfoo.dll.a`` for MinGW (gcc, clang, zig). A recipe
declares that layout in its outputs; prebake refuses an asset that breaks it rather than
moving files behind the recipe's back (the outputs, the manifest, the CMake and pkg-config
files and the link test then all name the same paths, the ones the recipe wrote):

- a DLL directly in ``lib/`` (declared or not) is refused, naming the file;
- a declared DLL must be in ``bin/`` and have an import library among the outputs, in
  ``lib/``: without one no consumer's linker can use it;
- which DLL an import library serves is read from its own bytes (the DLL name its members
  import), never guessed from file names (FFmpeg's ``avcodec-61.dll`` has
  ``libavcodec.dll.a``); one that serves no DLL of the outputs is refused.

A DLL below a subfolder (``bin/plugins/x.dll``, ``lib/gstreamer-1.0/x.dll``) is a plugin a
program loads by path, not a library it links: only a declared one must be in ``bin/``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from prebake.errors import PrebakeError
from prebake.inspect import ParseOptions, inspect

BIN = "bin"
LIB = "lib"
WHY = ("Windows finds a DLL next to the program or on PATH, and CMake's RUNTIME DESTINATION, "
       "vcpkg and Conan install it in bin/")


def is_dll(rel: str) -> bool:
    return rel.lower().endswith(".dll")


def is_implib_name(rel: str) -> bool:
    """``.dll.a`` (MinGW) or ``.lib`` (MSVC; a ``.lib`` may also be a static library, which
    :func:`imported_dll` tells apart by its bytes)."""
    low = rel.lower()
    return low.endswith((".dll.a", ".lib"))


def is_mingw_implib(rel: str) -> bool:
    return rel.lower().endswith(".dll.a")


def imported_dll(path: Path) -> str | None:
    """The DLL an import library's members import, read from its bytes; ``None`` for a file
    that is not an import library (a static ``.lib``). An import library naming several DLLs
    is refused: it would link a consumer against more than the asset says."""
    try:
        facts = inspect(path, ParseOptions(symbols=False))
    except PrebakeError as exc:
        raise PrebakeError(f"{path.name}: cannot read it as an import library: {exc}") from None
    if facts.kind != "import-library":
        return None
    names = sorted({n for m in facts.walk() for n in (m.needed or [])}, key=str.lower)
    if len(names) != 1:
        raise PrebakeError(f"{path.name}: an import library for "
                           f"{', '.join(names) or 'no DLL'}, not for one DLL")
    return names[0]


@dataclass
class Pairing:
    """Each declared DLL with its import libraries (``lib/x.lib``, ``lib/libx.dll.a``), the
    outputs that are neither, and what breaks the layout (one message per file)."""

    dlls: dict[str, tuple[str, ...]] = field(default_factory=dict)
    others: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def pair(outputs: Sequence[str], prefix: Path) -> Pairing:
    """Sort a recipe's declared library outputs (paths relative to ``prefix``) into DLLs with
    their import libraries and the rest, checking the layout of the module docstring."""
    out = Pairing()
    dlls = [rel for rel in outputs if is_dll(rel)]
    for rel in dlls:
        if rel.rpartition("/")[0] != BIN:
            out.problems.append(f"{rel}: a DLL ships in {BIN}/ ({WHY}): put it in "
                                f"{BIN}/{rel.rpartition('/')[2]}")
    by_name = {rel.rpartition("/")[2].lower(): rel for rel in dlls}
    found: dict[str, list[str]] = {rel: [] for rel in dlls}
    for rel in outputs:
        if is_dll(rel) or not is_implib_name(rel):
            if not is_dll(rel):
                out.others.append(rel)
            continue
        try:
            dll = imported_dll(prefix / rel)
        except PrebakeError as exc:
            out.problems.append(str(exc).replace(Path(rel).name, rel, 1))
            continue
        if dll is None:  # a static .lib
            out.others.append(rel)
            continue
        if rel.rpartition("/")[0] != LIB:
            out.problems.append(f"{rel}: an import library ships in {LIB}/, where a "
                                f"consumer's linker looks")
        target = by_name.get(dll.lower())
        if target is None:
            out.problems.append(f"{rel}: the import library of {dll}, which the outputs do "
                                f"not ship (they list {', '.join(dlls) or 'no DLL'})")
            continue
        found[target].append(rel)
    for rel in dlls:
        if not found[rel]:
            out.problems.append(f"{rel}: no import library among the outputs (a consumer's "
                                f"linker needs {LIB}/<name>.lib or {LIB}/lib<name>.dll.a; a "
                                "Repackage's import_libs writes them from the DLL's exports)")
        # the MSVC one first, then MinGW's: the order CMake's config and the manifest list
        out.dlls[rel] = tuple(sorted(found[rel], key=lambda r: (is_mingw_implib(r), r)))
    return out


def misplaced(files: Iterable[str]) -> list[str]:
    """Files a Windows asset must not hold where they are: a DLL directly in ``lib/`` (one
    message each; ``files`` are paths relative to the prefix)."""
    return [f"{rel}: a DLL in {LIB}/; it ships in {BIN}/ ({WHY}): put it in "
            f"{BIN}/{rel.rpartition('/')[2]} (the recipe's commands or layout, and its outputs)"
            for rel in files if is_dll(rel) and rel.rpartition("/")[0] == LIB]
