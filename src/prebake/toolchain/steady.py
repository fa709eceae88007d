"""Compiles whose output follows pointer values run through ``steady_cc`` (Emscripten's clang).

LLVM 21's WebAssembly backend orders nested ``try_table`` blocks by the addresses of machine
basic blocks (llvm/llvm-project#204883): the flagship's wasm archive differed from another
folder's build in 6 of 713 members, and one object compiled three times in one folder came
out three ways. ``prebake.toolchain.steady_cc`` runs each such compile with address-space
randomisation off and the unit's work folder at one path (a private mount namespace), which
makes the bytes the same in every folder; this module says which families need it and puts
it where the family takes a compiler wrapper (``Family.steady``, ``Family.launcher``), with a
compiler cache (ccache) run inside it rather than in its place.
"""

from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path

from prebake.model.families import family_of_argv
from prebake.toolchain.cmakefile import toolchain_folder
from prebake.toolchain.launcher import launcher_env
from prebake.toolchain.steady_cc import LAUNCHER_VARIABLE, ROOT_VARIABLE

#: the wrapper's file in the unit's work folder (inside it, so a toolchain environment's root
#: sees it at the same path)
WRAPPER_NAME = "steady-cc"
# the interpreter inside a toolchain environment (the root's own; prebake's venv is the
# host's); on the host, prebake's own interpreter
ENVIRONMENT_PYTHON = "/usr/bin/python3"


def wrapper_path(work_root: Path) -> Path:
    return toolchain_folder(work_root) / "bin" / WRAPPER_NAME


def wanted(cc: tuple[str, ...]) -> str | None:
    """The environment variable that takes the wrapper for this compiler, or ``None``."""
    fam = family_of_argv(cc)
    if fam is None or not fam.steady or not fam.launcher.startswith("env:"):
        return None
    return fam.launcher[4:]


def compile_env(cc: tuple[str, ...], work_root: Path, launcher: str | None) -> dict[str, str]:
    """The variables that put the wrapper (and the compiler cache inside it) in the build;
    for another family, the cache where that family takes it (``launcher_env``)."""
    variable = wanted(cc)
    if variable is None:
        return launcher_env(cc, launcher)
    out = {variable: str(wrapper_path(work_root)), ROOT_VARIABLE: str(work_root)}
    if launcher:
        out[LAUNCHER_VARIABLE] = launcher
    return out


def install(cc: tuple[str, ...], work_root: Path, *, in_environment: bool) -> Path | None:
    """Write the wrapper into the unit's work folder when its compiler needs it (before the
    first command; the folder is made afresh for every build)."""
    if wanted(cc) is None:
        return None
    python = ENVIRONMENT_PYTHON if in_environment else sys.executable
    source = resources.files("prebake.toolchain").joinpath("steady_cc.py").read_text()
    body = source.split("\n", 1)[1]  # the file's own `#!/usr/bin/env python3` line replaced
    path = wrapper_path(work_root)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!{python} -IS\n{body}")
    path.chmod(0o755)
    return path
