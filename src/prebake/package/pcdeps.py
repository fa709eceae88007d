"""What a library links after it, as its own ``.pc`` file says: the asset's CMake targets carry
the same dependencies a consumer's pkg-config would give it.

A dependency that installs one ``.pc`` file per library (FFmpeg: ``libavformat.pc`` requires
``libavcodec``, ``libswresample`` and ``libavutil``, and ``Libs.private: -lm -latomic``) has
stated its link graph; a CMake consumer should not get less than ``pkg-config --static`` gives.
So when every library of the asset has its ``.pc`` among the install's files, each library's
imported target links the targets of the libraries its ``Requires``/``Requires.private`` name
(CMake then orders them), and a static library also the system libraries and flags of its
``Libs``/``Libs.private`` (``m``, ``-pthread``): what a static archive leaves undefined. A
shared library's private dependencies are its own ``NEEDED`` entries, never the consumer's.
Without such files the asset's targets stay one chain in link order (``prebake.package.cmake``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from prebake.package.libs import Library

MAX_PC = 64 << 10  # a .pc file is a few hundred bytes; a bigger one is not read
PC_FOLDERS = ("lib/pkgconfig", "share/pkgconfig")


@dataclass(frozen=True)
class PcDeps:
    """One library's dependencies from its ``.pc``: ``requires`` are other libraries of the
    asset (their paths), ``system`` the link items after them (``m``, ``-pthread``)."""

    pc: str  # the .pc file it was read from (relative to the prefix)
    requires: tuple[str, ...] = ()
    system: tuple[str, ...] = ()


def _fields(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in text.splitlines():
        m = re.match(r"^([A-Za-z][\w.]*):\s*(.*)$", line)
        if m:
            out[m.group(1)] = m.group(2).strip()
    return out


def _names(requires: str) -> list[str]:
    """``libavcodec >= 61.19.101, libavutil`` -> ``["libavcodec", "libavutil"]``."""
    out = []
    for part in requires.split(","):
        words = part.split()
        if words:
            out.append(words[0])
    return out


def _link_items(flags: str, own: set[str]) -> list[str]:
    """A ``Libs`` value as CMake link items: ``-lm`` -> ``m``, other flags as they are; the
    asset's own libraries (``-lavcodec``) and its search folders (``-L${libdir}``) left out."""
    out: list[str] = []
    words = flags.split()
    i = 0
    while i < len(words):
        w = words[i]
        if w == "-framework" and i + 1 < len(words):
            out.append(f"-framework {words[i + 1]}")
            i += 2
            continue
        if w.startswith("-l") and len(w) > 2:
            if w[2:] not in own:
                out.append(w[2:])
        elif not w.startswith("-L"):
            out.append(w)
        i += 1
    return out


def _pc_of(prefix: Path, lib: Library, files: set[str]) -> str | None:
    for folder in PC_FOLDERS:
        for name in (f"lib{lib.stem}.pc", f"{lib.stem}.pc"):
            rel = f"{folder}/{name}"
            if rel in files:
                return rel
    return None


def read(prefix: Path, libs: Sequence[Library], files: Sequence[str]
         ) -> Mapping[str, PcDeps] | None:
    """Each library's dependencies (by its path), or None unless every library has its own
    ``.pc`` among ``files`` (the install's files, relative to ``prefix``)."""
    present = set(files)
    pcs = {lib.path: _pc_of(prefix, lib, present) for lib in libs}
    if len(libs) < 1 or any(pc is None for pc in pcs.values()):
        return None
    by_pc_name = {Path(str(pc)).stem: lib.path for lib in libs if (pc := pcs[lib.path])}
    own = {lib.stem for lib in libs}
    out: dict[str, PcDeps] = {}
    for lib in libs:
        pc = str(pcs[lib.path])
        path = prefix / pc
        if path.stat().st_size > MAX_PC:
            return None
        f = _fields(path.read_text(encoding="utf-8", errors="replace"))
        names = _names(f.get("Requires", "")) + _names(f.get("Requires.private", ""))
        requires = tuple(dict.fromkeys(by_pc_name[n] for n in names if n in by_pc_name))
        system: list[str] = []
        if lib.kind == "static":
            system = _link_items(f.get("Libs", ""), own) + _link_items(
                f.get("Libs.private", ""), own)
        out[lib.path] = PcDeps(pc, requires, tuple(dict.fromkeys(system)))
    if not any(d.requires or d.system for d in out.values()):
        return None  # the files state no dependency: nothing to add to the chain
    return out


def private_libs(deps: Mapping[str, PcDeps] | None, order: Sequence[str]) -> list[str]:
    """The system link flags of the static libraries, in link order, each once (the asset's
    own ``.pc`` file's ``Libs.private``)."""
    if not deps:
        return []
    items = [item for path in order if path in deps for item in deps[path].system]
    return [i if i.startswith("-") else f"-l{i}" for i in dict.fromkeys(items)]
