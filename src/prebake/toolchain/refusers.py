"""Which program names on a build's ``PATH`` the tools folder refuses: every C/C++ compiler,
preprocessor, assembler, linker and binutil the platform does not pin.

A short list of generic names (``cc gcc c++ g++ clang clang++ ar ranlib nm strip windres``)
was not enough: a configure told ``CC=gcc-12`` or ``CC=x86_64-linux-gnu-gcc-12`` found the
build machine's GCC on ``PATH`` and built the asset with it, and on a cross leg the build
machine's ``x86_64-linux-gnu-gcc``, ``cpp``, ``as`` and ``ld`` stayed reachable. So the names
are patterns, kept here as data: a base name, an optional GNU triple in front (its first word
a CPU) and an optional release after it (``-12``, ``-14.0``; MinGW's ``-posix``/``-win32``
builds too). The folder refuses every name on the build's ``PATH`` that matches one, plus
every bare base name (a script's fallback fails loudly even where the machine has no such
program). An absolute path is no ``PATH`` lookup:
the producer each object carries refuses what it built (``prebake.contract.producer_rule``).

The pinned tools' own wrappers run with the tools folder taken off ``PATH``
(``prebake.toolchain.shellscript.unshadowed``), so the pinned compiler finds its own
assembler and linker where it always does. ``as`` and ``ld`` themselves stay reachable in the
folder when they are the pinned GCC or Clang driver's own (``-print-prog-name=``): a build step
that runs the assembler or linker by name then gets the pinned toolchain's, never another.

The scan is bounded (``MAX_DIRS`` folders, ``MAX_ENTRIES`` names); it lists names and never
reads or hashes a program. What it finds depends on the machine, so only the patterns (their
text, ``describe``) enter the unit's input hash.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

# Compilers and preprocessors of C and C++ (with the drivers that wrap them).
COMPILERS = ("cc", "c++", "gcc", "g++", "c89", "c99", "clang", "clang++", "clang-cl", "cl",
             "emcc", "em++", "tcc", "cpp", "clang-cpp", "icc", "icx", "icpx")
# Assemblers and linkers a compiler driver or a Makefile runs by name.
ASSEMBLERS_LINKERS = ("as", "ld", "ld.bfd", "ld.gold", "gold", "ld.lld", "ld.mold", "ld64.lld",
                      "lld", "lld-link", "mold", "wasm-ld")
# The binutils a configure script asks for, in their GNU and LLVM spellings.
BINUTILS = ("ar", "ranlib", "nm", "strip", "windres", "gcc-ar", "gcc-nm", "gcc-ranlib",
            "llvm-ar", "llvm-ranlib", "llvm-nm", "llvm-strip", "llvm-windres", "llvm-lib",
            "llvm-rc", "llvm-dlltool", "dlltool")
BASES = (*COMPILERS, *ASSEMBLERS_LINKERS, *BINUTILS)
# The first word of a GNU triple: a triple-prefixed name is only one whose prefix starts so
# (``x86_64-w64-mingw32-gcc``), so ``clang-cl`` or ``gcc-ar`` are never read as one.
CPUS = ("x86_64", "amd64", "i386", "i486", "i586", "i686", "aarch64", "aarch64_be", "arm",
        "armv6", "armv7", "armv7l", "armhf", "armel", "arm64", "riscv32", "riscv64", "powerpc",
        "powerpc64", "powerpc64le", "ppc64", "ppc64le", "mips", "mipsel", "mips64", "mips64el",
        "mipsisa32r6", "mipsisa32r6el", "mipsisa64r6", "mipsisa64r6el", "s390x", "sparc64",
        "wasm32", "wasm64", "loongarch64", "alpha", "hppa", "m68k", "sh4", "ia64", "avr",
        "xtensa", "csky", "arc", "or1k", "nios2", "msp430")
# The names the pinned driver's own assembler and linker may keep (never refused when the
# pinned compiler is GCC's or Clang's driver and names them itself).
OWN_BY_NAME = ("as", "ld")
MAX_DIRS = 128       # PATH folders scanned
MAX_ENTRIES = 100_000  # names read over all of them
PROBE_TIMEOUT = 60

_PATTERN = re.compile(
    "(?:(?:" + "|".join(re.escape(c) for c in CPUS) + r")(?:-[A-Za-z0-9_.]+){1,3}-)?"
    "(" + "|".join(re.escape(b) for b in sorted(BASES, key=len, reverse=True)) + ")"
    r"(?:-?\d+(?:\.\d+)*)?(?:-(?:posix|win32|mcf))?")  # MinGW's thread-model builds


def matches(name: str) -> bool:
    """Whether ``name`` is a compiler, preprocessor, assembler, linker or binutil's name
    (``gcc``, ``gcc-12``, ``x86_64-linux-gnu-gcc-12``, ``ld.lld-14``, ``cpp``)."""
    return _PATTERN.fullmatch(name) is not None


def describe() -> str:
    """The refusal policy as text (the input hash reads it, never the scan's findings)."""
    return (f"# refused: {' '.join(BASES)}; and every name on PATH that is one of them with a "
            f"GNU triple in front (first word {'|'.join(CPUS)}) and/or a release after it")


def scan(path: str) -> tuple[str, ...]:
    """The names on ``path`` that ``matches``, sorted, once (the tools folder is taken out of
    ``path`` first: ``without``)."""
    found: set[str] = set()
    budget = MAX_ENTRIES
    for d in [p for p in path.split(os.pathsep) if p][:MAX_DIRS]:
        if budget <= 0:
            break
        try:
            with os.scandir(d) as it:
                for entry in it:
                    budget -= 1
                    if budget <= 0:
                        break
                    if matches(entry.name):
                        found.add(entry.name)
        except OSError:
            continue  # a folder that is gone or unreadable holds nothing the build can run
    return tuple(sorted(found))


def refused(path: str, keep: Iterable[str]) -> tuple[str, ...]:
    """Every name the folder refuses: the bare bases and what ``scan`` finds on ``path``
    (empty: the bases alone), less ``keep`` (the platform's own names and the folder's own
    scripts)."""
    kept = set(keep)
    return tuple(sorted({*BASES, *scan(path)} - kept))


def own_by_name(cc: Sequence[str], env: Mapping[str, str], *, cross: bool, gnu_driver: bool
                ) -> dict[str, str]:
    """``as``/``ld`` -> the program the pinned driver ``cc`` runs under that name, where it is
    GCC's or Clang's driver (``-print-prog-name=``). A bare answer is a ``PATH`` lookup the
    driver itself would make, taken only on a native build (on a cross leg it would be the
    build machine's). Empty for any other compiler (Emscripten, zig: their own linkers).
    ``env`` is the build's, its ``PATH`` without the tools folder."""
    if not gnu_driver or not cc:
        return {}
    out: dict[str, str] = {}
    path = env.get("PATH", "")
    for name in OWN_BY_NAME:
        try:
            proc = subprocess.run([*cc, f"-print-prog-name={name}"], capture_output=True,
                                  text=True, timeout=PROBE_TIMEOUT, env=env, check=False)
        except (OSError, subprocess.TimeoutExpired):
            continue
        said = proc.stdout.strip()
        if proc.returncode != 0 or not said or "\n" in said:
            continue
        if os.sep in said:
            program = said if Path(said).is_file() and os.access(said, os.X_OK) else None
        else:
            program = None if cross else shutil.which(said, path=path)
        if program is not None:
            out[name] = os.path.realpath(program)  # which() answers with the folder
    return out


def without(path: str, folder: str) -> str:
    """``path`` with ``folder`` taken out wherever it stands."""
    real = os.path.realpath(folder)
    return os.pathsep.join(p for p in path.split(os.pathsep)
                           if p and os.path.realpath(p) != real)


def summary(names: Sequence[str], own: Mapping[str, str]) -> str:
    """One log line for what the folder refuses and keeps (a long list, said once)."""
    kept = ", ".join(f"{n} -> {p}" for n, p in sorted(own.items()))
    return (f"# refusers ({len(names)}): {' '.join(names)}"
            + (f"\n# kept, the pinned driver's own: {kept}" if kept else ""))
