"""A ``.pc`` file judged by what pkg-config itself makes of it, not by a reading of its text.

A consumer never reads a ``.pc`` file: its pkg-config does, with its own grammar — a backslash
continues a line, field names are case-insensitive (``libs.private:``), variables expand
anywhere (``root=/`` then ``-L${root}opt/x``), ``${pcfiledir}/../../..`` climbs as far as it
says. A check of the text that knows only ``-L/…`` in ``Libs`` lets all of those through, and
the consumer's compiler is sent to a folder of the build machine. So every ``.pc`` an asset
ships is handed to the real ``pkg-config`` (pkgconf) with its search path at the asset alone
(``PKG_CONFIG_LIBDIR``, no system folders filtered out of the output), and what it prints is
judged: ``--cflags --libs --static`` and every variable the file defines (``--variable``, what
Meson and CMake's ``pkg_get_variable`` read). Every path in that output — ``-I``/``-L``/``-F``
and their split forms (``-I /x``), ``-isystem``, ``-idirafter``, ``-iquote``, ``--sysroot=``,
``-Wl,-rpath=/x`` / ``-Wl,-L/x``, a bare ``/x/libfoo.a``, a ``-D`` value — must be absolute and
inside the asset; a relative folder, a Windows drive or ``~`` fails too. Each file is expanded
on its own: a module it ``Requires`` is a stand-in without flags at the version asked (one the
asset ships is judged as its own file; one it does not is the consumer's). Called at packaging
(``bake.packaging``, the generated ``.pc`` files included) and by ``fetch`` on the unpacked
asset before it is installed.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from prebake.cores import usable_cores

TIMEOUT = 30.0  # seconds per pkg-config call (a .pc file is a few lines)
MAX_STANDINS = 256
#: options whose value is a folder or a file, joined (-I/x, --sysroot=/x) or as the next word
PATH_OPTIONS = ("--sysroot", "-isysroot", "-isystem", "-idirafter", "-iquote", "-imacros",
                "-include", "-iprefix", "-iwithprefixbefore", "-iwithprefix", "-I", "-L",
                "-F")
_OPTION = re.compile(r"-{1,2}[A-Za-z][A-Za-z0-9_+-]*")
_ABSOLUTE = re.compile(r"/|~|[A-Za-z]:[\\/]")
_REQUIREMENT = re.compile(r"^(\S+)(?:\s*(>=|<=|!=|=|>|<)\s*(\S+))?\s*$")


class PkgConfigMissing(Exception):
    """No pkg-config (pkgconf) here to judge the files with, or one that lacks what the
    judge asks of it."""


@dataclass(frozen=True)
class PcLeak:
    """A ``.pc`` file (inside the asset) whose expansion names something outside it."""

    path: str
    asked: str  # what pkg-config was asked: "--cflags --libs --static", "--variable=root"
    found: str  # the word it printed, or why it refused the file

    def render(self) -> str:
        return f"{self.path}: pkg-config {self.asked} gives {self.found}"


ASSET = "<asset>"  # how a message spells the folder the asset was judged in


def pkg_config() -> str:
    """The pkg-config to judge with: pkgconf (Debian's and Homebrew's ``pkg-config`` is
    pkgconf); raises ``PkgConfigMissing``."""
    for name in ("pkgconf", "pkg-config"):
        found = shutil.which(name)
        if found is not None:
            return found
    raise PkgConfigMissing("no pkg-config (pkgconf) on PATH to expand the asset's .pc files "
                           "with; install pkgconf")


def _leaves(path: str, inside: Path) -> bool:
    """A path pkg-config printed leaves the asset: relative (to whatever folder the consumer
    compiles in), ``~``, a drive, or absolute outside ``inside``."""
    if not path.startswith("/"):
        return True
    real, root = os.path.realpath(path), os.path.realpath(inside)
    return not (real == root or real.startswith(root + "/"))


def _outside(word: str, inside: Path) -> bool:
    """Whether one word of pkg-config's output names a path that leaves ``inside``."""
    if _ABSOLUTE.match(word):  # a bare path: /x/libfoo.a
        return _leaves(word, inside)
    if word.startswith("@"):  # a response file the compiler reads: @/x/flags
        return _leaves(word[1:], inside)
    option = next((o for o in PATH_OPTIONS if word.startswith(o) and len(word) > len(o)), None)
    if option is not None:  # -I/x, -Iinclude, --sysroot=/x, -L=/x (the sysroot's)
        return _leaves(word[len(option):].removeprefix("=").removeprefix("="), inside)
    m = _OPTION.match(word)
    if m is None:
        return False
    # -Wl,-rpath=/x, -Wl,-rpath,/x:/y, -Wl,-L/x, -Wl,@/x, -DDIR=/x: each piece after the
    # option's name
    return any((_ABSOLUTE.match(piece) and _leaves(piece, inside))
               or (piece.startswith(("-", "@")) and _outside(piece, inside))
               for piece in re.split(r"[=,:]", word[m.end():]))


def judge_words(words: Sequence[str], inside: Path) -> list[str]:
    """The words of a ``--cflags --libs`` line that name something outside ``inside``."""
    bad: list[str] = []
    i = 0
    while i < len(words):
        w = words[i]
        if w in PATH_OPTIONS and i + 1 < len(words):  # -I /x, -isystem /x
            if _leaves(words[i + 1], inside):
                bad.append(f"{w} {words[i + 1]}")
            i += 2
        elif w == "-Xlinker" and i + 1 < len(words):
            if _outside(words[i + 1], inside):
                bad.append(f"{w} {words[i + 1]}")
            i += 2
        else:
            if _outside(w, inside):
                bad.append(w)
            i += 1
    return bad


class _PkgConfig:
    """pkg-config whose whole search path is a folder of stand-ins."""

    def __init__(self, tool: str, standins: Path) -> None:
        self.tool = tool
        self.env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                    "PKG_CONFIG_LIBDIR": str(standins),
                    "PKG_CONFIG_PATH": "", "PKG_CONFIG_ALLOW_SYSTEM_CFLAGS": "1",
                    "PKG_CONFIG_ALLOW_SYSTEM_LIBS": "1"}

    def __call__(self, *args: str) -> tuple[int, str, str]:
        try:
            proc = subprocess.run([self.tool, *args], env=self.env, capture_output=True,
                                  text=True, errors="replace", timeout=TIMEOUT)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise PkgConfigMissing(f"{self.tool}: {exc}") from None
        return proc.returncode, proc.stdout, proc.stderr


def _first(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "no reason given")


def judge_tree(tree: Path, pcs: Sequence[str]) -> list[PcLeak]:
    """Every ``.pc`` among ``pcs`` (paths relative to ``tree``, the asset's files as unpacked
    there) through pkg-config; what leaves the tree, per file. Raises ``PkgConfigMissing``.

    Each file is expanded on its own: every module it requires — shipped in the asset (judged
    as its own file) or not (the consumer's) — is a stand-in without flags, at a version its
    requirement accepts, in a folder that is the whole search path. So the words judged are
    the file's own, and abseil's 191 files, whose graph pkg-config would walk for each one,
    cost a few calls each, run side by side (191 files: 3.0 s on 2 loaded cores, 2026-12-07)."""
    if not pcs:
        return []
    # pkg-config prints ${pcfiledir} as it was given the file: a relative tree (fetch --into
    # a relative folder) would make every path in the asset look relative, i.e. outside it
    tree = tree.absolute()
    tool = pkg_config()
    with tempfile.TemporaryDirectory(prefix="prebake-pc-") as tmp:

        def one(numbered: tuple[int, str]) -> list[PcLeak]:
            standins = Path(tmp) / str(numbered[0])
            standins.mkdir()
            run = _PkgConfig(tool, standins)
            problem = _standins(run, str(tree / numbered[1]), standins)
            return [PcLeak(numbered[1], "--print-requires", problem)] if problem \
                else _judge_one(run, tree, numbered[1])

        # the calls are processes: threads keep every core busy with them
        with ThreadPoolExecutor(max_workers=min(usable_cores(), len(pcs))) as pool:
            leaks = [x for found in pool.map(one, enumerate(sorted(pcs))) for x in found]
    root = str(tree)
    return [PcLeak(x.path, x.asked, x.found.replace(root, ASSET)) for x in leaks]


def _standins(run: _PkgConfig, path: str, folder: Path) -> str:
    """Write a stand-in for every module the file at ``path`` requires; what went wrong."""
    wanted: dict[str, str] = {}
    rc, out, err = run("--maximum-traverse-depth=1", "--print-requires",
                       "--print-requires-private", path)
    if rc != 0:
        return f"an error: {_first(err)}"
    for line in out.splitlines():
        m = _REQUIREMENT.match(line)
        if m is not None:
            wanted.setdefault(m[1], _standin_version(m[2], m[3]))
    for name, version in list(wanted.items())[:MAX_STANDINS]:
        if re.fullmatch(r"[A-Za-z0-9_.+-]+", name):
            (folder / f"{name}.pc").write_text(
                f"Name: {name}\nDescription: judged as its own file, or the consumer's\n"
                f"Version: {version}\n")
    return ""


def judge_files(files: Mapping[str, bytes]) -> list[PcLeak]:
    """``.pc`` files (asset path -> bytes) judged as they will lie in the asset: written at
    their paths in a folder of their own first (``${pcfiledir}`` is their folder there)."""
    with tempfile.TemporaryDirectory(prefix="prebake-asset-pc-") as tmp:
        for rel, data in files.items():
            (Path(tmp) / rel).parent.mkdir(parents=True, exist_ok=True)
            (Path(tmp) / rel).write_bytes(data)
        return judge_tree(Path(tmp), sorted(files))


def _standin_version(op: str | None, version: str | None) -> str:
    """A version that meets ``op version`` (a stand-in is never what is judged)."""
    if op is None or version is None:
        return "0"
    return {">": version + ".1", "!=": version + ".1", "<": "0"}.get(op, version)


def _judge_one(run: _PkgConfig, tree: Path, rel: str) -> list[PcLeak]:
    path = str(tree / rel)
    asked = "--cflags --libs --static"
    rc, out, err = run("--cflags", "--libs", "--static", "--print-errors",
                       "--keep-system-cflags", "--keep-system-libs", path)
    if rc != 0:
        return [PcLeak(rel, asked, f"an error: {_first(err)}")]
    try:
        words = shlex.split(out)
    except ValueError:
        words = out.split()
    leaks = [PcLeak(rel, asked, w) for w in judge_words(words, tree)]
    rc, out, err = run("--print-variables", path)
    if rc != 0:
        return [*leaks, PcLeak(rel, "--print-variables", f"an error: {_first(err)}")]
    for name in sorted(set(out.split())):
        rc, value, err = run(f"--variable={name}", path)
        if rc != 0:
            leaks.append(PcLeak(rel, f"--variable={name}", f"an error: {_first(err)}"))
            continue
        value = value.strip()
        # often one folder (libdir, prefix, root=/), else words like a flags line's
        bad = ([value] if _leaves(value, tree) else []) if _ABSOLUTE.match(value) \
            else judge_words(value.split(), tree)
        leaks += [PcLeak(rel, f"--variable={name}", w) for w in bad]
    return leaks
