"""Compilers map the unit's work folder out of what they write (``-ffile-prefix-map``).

An object that holds ``/…/.prebake/work/…`` through ``__FILE__`` or debug info differs between
two checkouts. Which compilers take the flag, and where Emscripten reads it from, is knowledge of
the compiler families, so it lives with them: the build puts the flags on ``{cc}``/``{cxx}`` and
in the environment, the CMake toolchain file on its compilers, and ``prebake.package.relocate``
searches the shipped files for the same folder spellings.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from prebake.errors import PrebakeError
from prebake.model.families import family_of_argv

# Compilers (by the tool's file name) that accept ``-ffile-prefix-map=OLD=NEW`` (gcc ≥ 8,
# clang ≥ 10, Emscripten's emcc/em++, zig's ``cc``/``c++``). Others (cl.exe) get no flag.
PREFIX_MAP_TOOLS = re.compile(
    r"^(?:.*-)?(?:gcc|g\+\+|cc|c\+\+|clang|clang\+\+|emcc|em\+\+)(?:-\d+(?:\.\d+)*)?(?:\.py)?$")
# The value a mapped folder becomes inside objects: ``./zstd/src/lib/common/xxhash.c``.
MAPPED_TO = "."
# Emscripten's drivers read extra arguments for every compile from this variable, so flags
# reach compiles that emcmake's toolchain file or a build script start by name.
EMSCRIPTEN_FLAGS_VARIABLE = "EMCC_CFLAGS"
# Needles shorter than this are not searched for (``/`` or ``/w`` would match everything).
MIN_NEEDLE = 4


def spellings(folders: Iterable[Path]) -> tuple[str, ...]:
    """Each folder as written and as resolved, longest first: a build can see either."""
    out: list[str] = []
    for f in folders:
        for s in (os.path.abspath(f), os.path.realpath(f)):  # noqa: PTH100 (no symlinks resolved)
            s = s.rstrip("/")
            if len(s) >= MIN_NEEDLE and s not in out:
                out.append(s)
    return tuple(sorted(out, key=lambda s: (-len(s), s)))


def prefix_map_flags(work_root: Path, cc: Sequence[str] = ()) -> tuple[str, ...]:
    """``-ffile-prefix-map`` for the unit's work folder (sources, build tree, prefix): covers
    ``__FILE__``, debug info and coverage paths alike (``-fmacro-`` + ``-fdebug-prefix-map``);
    with ``cc``, for the compiler's own folder of headers too (:func:`own_folder_flags`)."""
    work = tuple(f"-ffile-prefix-map={s}={MAPPED_TO}" for s in spellings([work_root]))
    return work + own_folder_flags(cc)


def own_folder_mapped(cc: Sequence[str]) -> str | None:
    """What the compiler's own folder becomes inside objects (``/zig/lib``), or ``None`` when
    its family has no such folder."""
    fam = family_of_argv(cc)
    return f"/{fam.name}/lib" if fam is not None and fam.lib_dir_args else None


def own_folder_flags(cc: Sequence[str]) -> tuple[str, ...]:
    """zig's C++ objects carry debug info naming its libc++ and libc headers, which live in
    its own folder: for PyPI's ``ziglang``, inside the Python environment prebake runs in
    (``…/.venv/lib/python3.11/site-packages/ziglang/lib``), so the same sources gave other
    bytes from another checkout's environment or another Python release. That folder is
    mapped to a fixed name as the work folder is."""
    mapped = own_folder_mapped(cc)
    if mapped is None:
        return ()
    fam = family_of_argv(cc)
    assert fam is not None and fam.lib_dir_args is not None
    folder = _ask_own_folder(fam.driver(cc), fam.lib_dir_args, fam.lib_dir)
    return tuple(f"-ffile-prefix-map={s}={mapped}" for s in spellings([Path(folder)]))


@functools.cache
def _ask_own_folder(driver: tuple[str, ...], args: tuple[str, ...], pattern: str) -> str:
    """The folder the driver prints (``zig env``), once per process; a driver that cannot
    say is an error (its objects would hold a folder nothing maps)."""
    try:
        proc = subprocess.run([*driver, *args], capture_output=True, text=True, timeout=120,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PrebakeError(f"{shlex.join([*driver, *args])}: cannot run it to find the "
                           f"compiler's own folder ({exc})") from None
    m = re.search(pattern, proc.stdout)
    if proc.returncode != 0 or m is None:
        raise PrebakeError(f"{shlex.join([*driver, *args])}: exit {proc.returncode}, no "
                           "folder of its own in what it printed (its objects' debug info "
                           "would name it)")
    return m.group(1)


def accepts_prefix_map(argv: Sequence[str]) -> bool:
    """Whether the compiler command is one whose family takes ``-ffile-prefix-map``."""
    if not argv:
        return False
    if "ziglang" in argv and any(a in ("cc", "c++") for a in argv):
        return True
    return bool(PREFIX_MAP_TOOLS.match(argv[0].rsplit("/", 1)[-1]))


def is_emscripten(argv: Sequence[str]) -> bool:
    return bool(argv) and argv[0].rsplit("/", 1)[-1] in ("emcc", "em++", "emcc.py", "em++.py")


def compiler_argv(argv: tuple[str, ...], flags: Sequence[str]) -> tuple[str, ...]:
    """The toolchain command ``{cc}``/``{cxx}`` expand to: the flags ride on the command, so
    they reach direct compiles and build systems given ``CC``/``CXX`` (CMake keeps a
    compiler's arguments as ``CMAKE_C_COMPILER_ARG1``)."""
    return (*argv, *flags) if flags and accepts_prefix_map(argv) else argv


def compiler_env(env: Mapping[str, str], cc: Sequence[str], flags: Sequence[str]
                 ) -> dict[str, str]:
    """The build environment with the flags where the toolchain reads them by itself.

    Emscripten's compilers are usually started by name (``emcmake``'s toolchain file, a build
    script), never through ``{cc}``: ``EMCC_CFLAGS`` reaches every one of them. It is applied
    after the sanitiser, because it is prebake's own setting: a caller's ``EMCC_CFLAGS`` still
    never reaches the build (the platform's ``env_unset`` removed it before this), and a value
    the platform set on purpose is kept in front of the flags.
    """
    out = dict(env)
    if flags and is_emscripten(cc):
        mine = " ".join(shlex.quote(f) for f in flags)
        have = out.get(EMSCRIPTEN_FLAGS_VARIABLE, "").strip()
        out[EMSCRIPTEN_FLAGS_VARIABLE] = f"{have} {mine}".strip()
    return out
