"""The ``/bin/sh`` scripts prebake writes for a build's tools, and their quoting: one module, so
every wrapper (the CMake toolchain file's, the tools folder's, the Meson file's) quotes the
same way.

A tool of several words (``python -m ziglang cc -target aarch64-linux-gnu.2.28``, any
compiler with prebake's ``-ffile-prefix-map``) becomes one path this way: CMake takes a
compiler as one word, a ``configure`` script splits ``$CC`` on spaces and records it. Scripts
get a fixed mtime: ccache (``compiler_check=mtime``) then keeps its hits across rewrites.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path

from prebake.model.families import family_of_argv

FIXED_MTIME = 315532800
ARM_ARCHES = frozenset({"aarch64", "arm64", "armv7"})
# GCC's -march=armvX.Y-a+feat... as zig's -mcpu=generic+vX_Ya+feat... (+noF: -F; fp16: fullfp16)
MARCH_WRAPPER = r"""#!/bin/sh
# this driver reads -march as -mcpu on ARM: GCC's spelling is rewritten for it
for a do
  shift
  case $a in
    -march=armv*) a=-mcpu=generic+$(printf '%s\n' "${a#-march=arm}" | sed \
      -e 's/^v\([0-9]\)\.\([0-9]\)-a/v\1_\2a/' -e 's/^v\([0-9]\)-a/v\1a/' \
      -e 's/+nofp16\(+\|$\)/-fullfp16\1/g' -e 's/+fp16\(+\|$\)/+fullfp16\1/g' \
      -e 's/+no\([a-z0-9]*\)/-\1/g') ;;
  esac
  set -- "$@" "$a"
done
"""
ZIG_WRAPPERS = {"cc": "zig-cc", "cxx": "zig-c++", "ar": "zig-ar", "ranlib": "zig-ranlib"}


def quote(word: str) -> str:
    """One word for a ``/bin/sh`` line."""
    return shlex.quote(word)


def join(argv: Sequence[str]) -> str:
    """A command for a ``/bin/sh`` line, each word quoted."""
    return shlex.join(argv)


def rewrites_march(arch: str, argv: Sequence[str], role: str) -> bool:
    """Whether ``argv`` (a compiler) reads ``-march`` as ``-mcpu`` on this ARM ``arch``."""
    fam = family_of_argv(argv) if role in ("cc", "cxx") else None
    return arch in ARM_ARCHES and fam is not None and fam.march_as_mcpu


def wrapper_script(arch: str, argv: Sequence[str], role: str, unshadow: str | None = None
                   ) -> str:
    """A script that runs ``argv`` with its own arguments after it; a compiler whose driver
    reads ``-march`` as ``-mcpu`` on ARM (zig) gets GCC's spelling rewritten first. With
    ``unshadow`` (the tools folder), the tool runs with that folder off ``PATH``: the pinned
    compiler then finds its own assembler and linker, never the folder's refusers."""
    head = MARCH_WRAPPER if rewrites_march(arch, argv, role) else "#!/bin/sh\n"
    if unshadow is not None:
        head += unshadowed(unshadow)
    return head + f"exec {join(argv)} \"$@\"\n"


def unshadowed(folder: str) -> str:
    """``/bin/sh`` lines that take ``folder`` out of ``PATH`` wherever it stands (no
    subprocess: a compile runs them)."""
    f = quote(folder)
    return ("# the pinned tool runs with this folder off PATH (its refusers are for the build)\n"
            f"p=\":$PATH:\"; f={f}\n"
            "while :; do case $p in *\":$f:\"*) p=\"${p%%\":$f:\"*}:${p#*\":$f:\"}\" ;; "
            "*) break ;; esac; done\n"
            "p=${p#:}; PATH=${p%:}; export PATH\n")


def exec_script(program: str, env: Mapping[str, str] | None = None, comment: str = "") -> str:
    """A script that runs ``program`` (with ``env`` exported first)."""
    lines = ["#!/bin/sh"]
    if comment:
        lines.append(f"# {comment}")
    for k, v in (env or {}).items():
        lines.append(f"{k}={quote(v)}")
    if env:
        lines.append("export " + " ".join(env))
    lines.append(f"exec {quote(program)} \"$@\"")
    return "\n".join(lines) + "\n"


def wrapper_name(argv: Sequence[str], role: str) -> str:
    """A wrapper's file name: the compiler's own (ccache guesses its type from it)."""
    fam = family_of_argv(argv)
    if fam is not None and fam.module and fam.module in argv:
        return ZIG_WRAPPERS.get(role, f"zig-{role}")
    return Path(argv[0]).name


def write_file(path: Path, text: str, mode: int) -> Path:
    """Write ``path`` whole or not at all (a temporary beside it, renamed), fixed mtime."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(text)
    tmp.chmod(mode)
    os.utime(tmp, (FIXED_MTIME, FIXED_MTIME))
    tmp.replace(path)
    return path
