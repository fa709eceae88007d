"""Relocatable, folder-independent assets: no build folder survives into what a unit ships.

An upstream install writes the folder it was installed into wherever its build system put it:
``prefix=/…/.prebake/work/wasm/deps-zstd/prefix`` in a ``.pc``, ``/…/prefix/lib/libfoo.a`` in a
CMake config, ``libdir='/…/lib'`` in a libtool ``.la``; compilers put the source folder into
objects through ``__FILE__`` and debug info. Such an asset is wrong for every consumer and two
checkouts at different paths build two sha256s from one input hash.

So the package step, in this order:

1. rewrites the install files prebake understands (``rewrite_install``): a ``.pc`` gets a
   ``${pcfiledir}``-relative ``prefix``, a ``*.cmake`` file paths relative to
   ``${CMAKE_CURRENT_LIST_DIR}``, a libtool ``.la`` is dropped (it only serves libtool's own
   link of shared libraries, and holds nothing that is right outside the build machine);
2. has had the compilers map the unit's work folder out of objects while they ran
   (``prebake.toolchain.prefix_map``: which compilers take ``-ffile-prefix-map`` and how);
3. scans every file it is about to ship, text and binary, for the workspace, work and prefix
   folders (``scan``) and fails the unit naming each file that still holds one.
"""

from __future__ import annotations

import mmap
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from prebake.package.archive import Entry
from prebake.toolchain.prefix_map import spellings

# What a rewritten ``.pc`` calls its prefix: pkg-config sets ``pcfiledir`` to the file's folder.
PC_PREFIX = "${pcfiledir}"
CMAKE_PREFIX = "${CMAKE_CURRENT_LIST_DIR}"
CHUNK = 1 << 20


@dataclass(frozen=True)
class BuildPaths:
    """The absolute folders a unit's build ran in; none of them may reach its asset.

    ``prefix`` is the install prefix (what ``.pc``/CMake files are rewritten against);
    ``others`` the work, dependency and workspace folders, searched for but not rewritten.
    Both spellings of a folder reached through a symlink are kept.
    """

    prefix: tuple[str, ...]
    others: tuple[str, ...] = ()

    @classmethod
    def of(cls, prefix: Path, *others: Path) -> BuildPaths:
        return cls(spellings([prefix]), spellings(others))

    @property
    def needles(self) -> tuple[str, ...]:
        """Every folder, longest first (a leak is named by the most specific folder)."""
        return tuple(sorted({*self.prefix, *self.others}, key=lambda s: (-len(s), s)))


# ---- 2. rewrite the install files prebake understands -------------------------------------

@dataclass
class Rewritten:
    """What ``rewrite_install`` did, for the build log."""

    changed: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)


def _pattern(folders: Sequence[str]) -> re.Pattern[str]:
    """A folder as a whole path: ``/x/prefix`` but not ``/x/prefix2``."""
    alts = "|".join(re.escape(f) for f in sorted(folders, key=len, reverse=True))
    return re.compile(rf"(?:{alts})(?![\w.+-])")


def _up(rel: str) -> str:
    """From a file's folder back to the prefix: ``lib/pkgconfig/x.pc`` -> ``/../..``."""
    depth = rel.count("/")
    return "".join(["/.."] * depth)


def rewrite_pc(text: str, rel: str, folders: Sequence[str]) -> str:
    """``prefix=/abs`` -> ``prefix=${pcfiledir}/../..``; any other ``/abs`` -> ``${prefix}``
    (or the ``${pcfiledir}`` form when the file defines no ``prefix`` variable)."""
    pat = _pattern(folders)
    here = PC_PREFIX + _up(rel)
    has_prefix_var = re.search(r"^prefix\s*=", text, re.M) is not None
    out = []
    for line in text.splitlines(keepends=True):
        if re.match(r"prefix\s*=", line):
            line = pat.sub(lambda _m: here, line)
        else:
            line = pat.sub(lambda _m: "${prefix}" if has_prefix_var else here, line)
        out.append(line)
    return "".join(out)


def rewrite_cmake(text: str, rel: str, folders: Sequence[str]) -> str:
    """``/abs/lib/libfoo.a`` -> ``${CMAKE_CURRENT_LIST_DIR}/../../../lib/libfoo.a``."""
    here = CMAKE_PREFIX + _up(rel)
    return _pattern(folders).sub(lambda _m: here, text)


def rewrite_install(prefix: Path, files: Iterable[str], paths: BuildPaths) -> Rewritten:
    """Rewrite (in place, below ``prefix``) the ``.pc``, ``*.cmake`` and ``.la`` files among
    ``files`` (paths relative to ``prefix``)."""
    done = Rewritten()
    for rel in sorted(files):
        p = prefix / rel
        if p.is_symlink() or not p.is_file():
            continue
        if rel.endswith(".la"):
            p.unlink()
            done.dropped.append(rel)
            continue
        if rel.endswith(".pc"):
            fix = rewrite_pc
        elif rel.endswith(".cmake"):
            fix = rewrite_cmake
        else:
            continue
        raw = p.read_bytes()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue  # not text prebake can edit; the scan judges it like any other file
        new = fix(text, rel, paths.prefix)
        if new != text:
            p.write_text(new, encoding="utf-8")
            done.changed.append(rel)
    return done


# ---- 2b. a .pc file names nothing outside the asset: judged by pkg-config itself, after
# relocation (``prebake.package.pcjudge``)

# ---- 3. nothing of the build folders is left ----------------------------------------------

@dataclass(frozen=True)
class Leak:
    """A packaged file that still names a build folder."""

    path: str  # inside the asset
    folder: str  # which build folder it names

    def render(self) -> str:
        return f"{self.path} (holds {self.folder})"


def _find_in(entry: Entry, needles: Sequence[bytes]) -> bytes | None:
    """The first needle ``entry``'s bytes contain (longest needles first), else ``None``."""
    if entry.data is not None:
        return next((n for n in needles if n in entry.data), None)
    assert entry.source is not None
    with open(entry.source, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size == 0:
            return None
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            return next((n for n in needles if mm.find(n) != -1), None)


def scan(entries: Iterable[Entry], paths: BuildPaths) -> list[Leak]:
    """Every file among ``entries`` that holds one of the build folders (bytes, any format)."""
    needles = [n.encode() for n in paths.needles]
    leaks = []
    for e in entries:
        if e.kind == "symlink" and e.target is not None:
            hit = next((n for n in needles if n in e.target.encode()), None)
        elif e.kind == "file":
            hit = _find_in(e, needles)
        else:
            continue
        if hit is not None:
            leaks.append(Leak(e.path, hit.decode()))
    return sorted(leaks, key=lambda x: x.path)


def render_leaks(unit: str, leaks: Sequence[Leak], limit: int = 40) -> str:
    shown = [f"  {leak.render()}" for leak in leaks[:limit]]
    if len(leaks) > limit:
        shown.append(f"  … and {len(leaks) - limit} more")
    return (f"{unit}: {len(leaks)} packaged file(s) still name a build folder (the asset would "
            "be wrong anywhere else; the build system wrote them, prebake could not rewrite "
            "them):\n" + "\n".join(shown))
