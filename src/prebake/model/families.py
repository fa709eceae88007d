"""Toolchain families as data: how each is recognised and how it reports version and target.

One table for everything that needs to know what a compiler is — the pin check, the measured
identity in input hashes, the default ``ar``, what ``prebake ci github`` installs and what
``prebake toolchain install`` can provision. A family is recognised from the command line as
written (``emcc``, ``python -m ziglang cc``, ``x86_64-w64-mingw32-gcc``…) and, for a generic
``cc``, from the first line the compiler prints for ``--version``.

The rows are ordered: the first match wins, so Emscripten (whose banner says "gcc/clang-like")
and mingw (a gcc) come before the generic families.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Provision = Literal["emsdk", "pypi", "apt", "xcode", "none"]
# which measured release a producer record carries: the family's own, its LLVM's, or (Apple)
# the clang build number of its version line ("Apple clang version 15.0.0 (clang-1500.3.9.4)")
Release = Literal["version", "llvm", "build"]


@dataclass(frozen=True)
class Family:
    """One family of compilers.

    ``commands`` are globs on the compiler's file name; ``module`` a Python module that runs
    it (``python -m ziglang cc``). ``banner`` matches the first ``--version`` line (how a
    plain ``cc`` is recognised). ``version`` finds the release in the output of the version
    command: ``version_args`` after the compiler's argv, or — with ``driver_version`` — after
    the driver's argv without its ``cc``/``c++`` word (``zig version``). ``target_args``
    make the compiler print its target triple; without them (a driver slow to start, like
    Emscripten's Python ones, or zig) ``target`` finds it in the version output or, for zig,
    in the output of ``llvm_args``. ``llvm`` finds the LLVM release the compiler
    writes bitcode with (in the output of ``llvm_args``), for the consumer's comparison.
    ``provision`` says how CI and ``prebake toolchain install`` put it on a machine:
    ``emsdk`` (emsdk at the pinned version), ``pypi`` (``package==pin``), ``apt`` (Debian
    ``package``, not at a chosen version) or ``none``. ``launcher`` says how a compiler cache
    (ccache) wraps it: ``argv`` (put in front), ``env:NAME`` (Emscripten's drivers are Python
    programs that take it as ``EM_COMPILER_WRAPPER``) or ``none`` (zig caches its own work).
    ``march_as_mcpu``: the driver reads ``-march=X`` as ``-mcpu=X`` on ARM (zig), so the GCC
    spelling build systems use per file (``-march=armv8.2-a+dotprod``, onnxruntime's MLAS and
    XNNPACK) fails unless prebake's compiler wrapper rewrites it (``prebake.toolchain.cmakefile``).
    ``lib_dir_args``: what the driver is run with to print its own folder of headers and
    runtime sources (``zig env``: ``lib_dir``, found by ``lib_dir``), whose paths its objects'
    debug info records: mapped out like the work folder (``prebake.toolchain.prefix_map``).
    ``steady``: its compiles run through ``prebake.toolchain.steady_cc`` (in the ``launcher``
    variable, the compiler cache inside it), because its code generation follows pointer
    values (LLVM 21's wasm backend, ``prebake.toolchain.steady``).
    ``producers``: what its compiler writes into the objects it makes, as the inspector reads
    it (``abi.producer``): each a tool and the measured release it carries (``version``, the
    family's own; ``llvm``, its LLVM's: Emscripten's and zig's objects name their clang).
    ``runtime_objects``: the files of its own runtime its driver links into every image
    (``-print-file-name=`` finds them), whose producers a linked image carries too: clang's
    are the GCC installation's ``crtbegin*.o`` (docs/toolchains.md).
    """

    name: str
    title: str
    commands: tuple[str, ...]
    banner: str
    version: str
    version_args: tuple[str, ...] = ("--version",)
    driver_version: bool = False
    target_args: tuple[str, ...] | None = ("-dumpmachine",)
    target: str = r"^Target: (\S+)"
    module: str | None = None
    ar: tuple[str, ...] = ("ar",)
    llvm: str | None = None
    llvm_args: tuple[str, ...] = ("--version",)
    provision: Provision = "none"
    package: str | None = None
    launcher: str = "argv"
    march_as_mcpu: bool = False
    lib_dir_args: tuple[str, ...] | None = None
    lib_dir: str = ""
    steady: bool = False
    # the only build machine it runs on (``macos``: AppleClang needs Xcode's macOS SDK)
    host_os: str | None = None
    requires: str = ""  # what it needs there, for the line that refuses it elsewhere
    producers: tuple[tuple[str, Release], ...] = ()
    runtime_objects: tuple[str, ...] = ()

    def matches_argv(self, argv: Sequence[str]) -> bool:
        if self.module and "-m" in argv:
            i = list(argv).index("-m")
            if i + 1 < len(argv) and argv[i + 1] == self.module:
                return True
        if not argv:
            return False
        name = Path(argv[0]).name
        return any(fnmatch.fnmatchcase(name, glob) for glob in self.commands)

    def matches_banner(self, line: str) -> bool:
        return re.search(self.banner, line) is not None

    def parse_version(self, output: str) -> str | None:
        m = re.search(self.version, output, re.MULTILINE)
        return m.group(1) if m else None

    def parse_target(self, output: str) -> str:
        m = re.search(self.target, output, re.MULTILINE)
        return m.group(1) if m else ""

    def parse_llvm(self, output: str) -> str | None:
        if self.llvm is None:
            return None
        m = re.search(self.llvm, output, re.MULTILINE)
        return m.group(1) if m else None

    def driver(self, argv: Sequence[str]) -> tuple[str, ...]:
        """The argv of the driver without its compiler word (``python -m ziglang``)."""
        for i, word in enumerate(argv):
            if i > 0 and word in ("cc", "c++", "ar"):
                return tuple(argv[:i])
        return tuple(argv)

    def default_ar(self, cc: Sequence[str]) -> tuple[str, ...]:
        if self.driver_version:
            return (*self.driver(cc), *self.ar)
        if self.name == "appleclang":
            return self.ar
        if self.name == "mingw" and cc:
            return (Path(cc[0]).name.rsplit("-", 1)[0] + "-ar",)
        return self.ar


# A release: digits and dots (``12-win32`` reports 12, ``13.0.1-11+b2`` reports 13.0.1).
_REL = r"(\d+(?:\.\d+)*)"
CLANG_VERSION = r"clang version " + _REL

FAMILIES: tuple[Family, ...] = (
    Family(
        name="emscripten", title="Emscripten (emcc/em++)",
        commands=("emcc", "em++", "emcc.py", "em++.py"),
        banner=r"^em(?:cc|\+\+)(?:\.py)? \(Emscripten",
        version=r"^em(?:cc|\+\+)\S* \(Emscripten[^)]*\) " + _REL,
        # one `emcc -v` (0.6 s) prints the release, the target and its clang's version
        version_args=("-v",), target_args=None,
        ar=("emar",), llvm=CLANG_VERSION,
        provision="emsdk", package="emsdk", launcher="env:EM_COMPILER_WRAPPER", steady=True,
        # objects: processed-by its clang; its system libraries are that clang's too
        producers=(("clang", "llvm"), ("llvm", "llvm"), ("emscripten", "version")),
    ),
    Family(
        name="zig", title="zig cc/c++ (PyPI ziglang or a zig binary)",
        commands=("zig",), module="ziglang",
        banner=r"^\d+\.\d+\.\d+",
        version=r"^" + _REL, version_args=("version",), driver_version=True,
        target_args=None, llvm_args=("-v",),
        ar=("ar",), llvm=CLANG_VERSION, provision="pypi", package="ziglang", launcher="none",
        march_as_mcpu=True,
        # `zig env` (ZON since 0.14: `.lib_dir = "…"`; JSON before: `"lib_dir": "…"`)
        lib_dir_args=("env",), lib_dir=r'\.?"?lib_dir"?\s*[=:]\s*"([^"]+)"',
        # its bundled clang's .ident; its libc, libc++ and compiler_rt are built by it too
        producers=(("clang", "llvm"), ("llvm", "llvm"), ("zig", "version")),
    ),
    Family(
        name="mingw", title="MinGW-w64 GCC (Windows cross compiler)",
        commands=("*-w64-mingw32-gcc*", "*-w64-mingw32-g++*", "*-w64-mingw32-c++*"),
        banner=r"^\S*-w64-mingw32-\S+ \(",
        version=r"^\S+ \([^)]*\) " + _REL,
        provision="apt", package="mingw-w64",
        # "GCC: (GNU) 12-win32"; the mingw-w64 CRT's objects say "GCC: (GNU) 12 20220819"
        producers=(("gcc", "version"),), runtime_objects=("dllcrt2.o", "crt2.o"),
    ),
    Family(
        # Xcode's clang through xcrun (the SDK it selects holds CoreML and the Apple
        # frameworks); its banner says "Apple clang version 15.0.0 (clang-1500.3.9.4)", a
        # release of Apple's own numbering, not LLVM's
        name="appleclang", title="AppleClang (Xcode, via xcrun)",
        commands=("xcrun",),
        banner=r"^Apple clang version \d",
        version=r"Apple clang version " + _REL,
        ar=("xcrun", "ar"), provision="xcode", package="Xcode",
        host_os="macos", requires="Xcode's macOS SDK",
        producers=(("appleclang", "build"),),
    ),
    Family(
        name="clang", title="Clang (LLVM)",
        commands=("clang", "clang++", "clang-[0-9]*", "clang++-[0-9]*", "*-clang", "*-clang++"),
        banner=r"clang version \d",
        version=CLANG_VERSION, llvm=CLANG_VERSION,
        # on Linux it links the GCC installation's crtbegin*.o (GCC's .ident in every image)
        producers=(("clang", "version"), ("llvm", "llvm")),
        runtime_objects=("crtbeginS.o", "crtendS.o", "crtbegin.o", "crtend.o"),
    ),
    Family(
        name="gcc", title="GCC",
        commands=("gcc", "g++", "gcc-[0-9]*", "g++-[0-9]*", "*-linux-gnu-gcc*",
                  "*-linux-gnu-g++*"),
        banner=r"^\S*(?:gcc|g\+\+|cc|c\+\+)(?:-\d+)? \(",
        version=r"^\S+ \([^)]*\) " + _REL,
        producers=(("gcc", "version"),),
    ),
)
BY_NAME = {f.name: f for f in FAMILIES}


def family_of_argv(argv: Sequence[str]) -> Family | None:
    """The family a command line names, without running it (``None`` for a plain ``cc``)."""
    for fam in FAMILIES:
        if fam.matches_argv(argv):
            return fam
    return None


def family_of_banner(line: str) -> Family | None:
    """The family whose ``--version`` first line this is (how ``cc`` is recognised)."""
    for fam in FAMILIES:
        if fam.module is None and fam.matches_banner(line):
            return fam
    return None


def release_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", version))


def pin_matches(pinned: str, reported: str) -> bool:
    """A pin names a release, as precisely as it likes: ``14`` covers 14.0.6, ``3.1.6`` does
    not cover 3.1.69 (compared number by number, never as a substring)."""
    want, got = release_tuple(pinned), release_tuple(reported)
    return bool(want) and got[: len(want)] == want


def at_least(reported: str, minimum: str) -> bool:
    return release_tuple(reported) >= release_tuple(minimum)
