"""The compiler launcher (ccache): which one the caller asked for and where each compiler family
takes it.

This is knowledge about compiler families (each ``Family``'s ``launcher``: in front
of the argv, through an environment variable, or not at all), so it lives with them; the build
puts it in front of its commands and the CMake toolchain file writes it as
``CMAKE_<LANG>_COMPILER_LAUNCHER``.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping

from prebake.model.families import family_of_argv

# The caller names a compiler launcher (ccache) with this; CI legs set it next to CCACHE_DIR.
LAUNCHER_VARIABLE = "PREBAKE_COMPILER_LAUNCHER"


def compiler_launcher(caller: Mapping[str, str]) -> str | None:
    """The launcher executable the caller asked for (``ccache``), resolved on its PATH."""
    name = caller.get(LAUNCHER_VARIABLE, "").strip()
    if not name:
        return None
    return shutil.which(name, path=caller.get("PATH")) or None


def with_launcher(argv: tuple[str, ...], launcher: str | None) -> tuple[str, ...]:
    """``argv`` run through the launcher, where the launcher can cache it.

    Emscripten's drivers are Python programs that call clang themselves (they take the launcher
    as ``EM_COMPILER_WRAPPER``, see ``launcher_env``); ``python -m ziglang cc`` is an
    interpreter, not a compiler ccache knows (zig caches its own work in its cache folders).
    """
    if launcher is None or not argv:
        return argv
    fam = family_of_argv(argv)
    if (fam is not None and fam.launcher != "argv") or argv[0].rsplit("/", 1)[-1].startswith(
            "python"):
        return argv
    return (launcher, *argv)


def launcher_env(cc: tuple[str, ...], launcher: str | None) -> dict[str, str]:
    fam = family_of_argv(cc)
    if launcher and fam is not None and fam.launcher.startswith("env:"):
        return {fam.launcher[4:]: launcher}
    return {}
