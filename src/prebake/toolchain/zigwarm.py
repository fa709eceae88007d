"""zig's C runtime for a target, built once from a neutral folder before a unit's commands run.

zig compiles the pieces of libc and libc++ a link needs (``crt1``, glibc's ``libc_nonshared``,
libc++) the first time a link for that target asks for them, in whatever folder that first link
runs, and caches them in ``ZIG_GLOBAL_CACHE_DIR`` without the folder in the key. Their debug
info records that folder (``DW_AT_comp_dir``): when the first link is CMake's compiler check
inside a unit's build tree, every executable and shared library linked for that target from
then on names the build folder, and the relocation guard rightly refuses the asset.
(Seen with ziglang 0.17.1: ``bin/hello`` held ``…/build/CMakeFiles/3.25.1/CompilerIdC``.)

So before a unit builds with zig, prebake links a C and a C++ program for the platform's
target from ``/``: the cached runtime then records ``/``, and later links reuse it.
"""

from __future__ import annotations

import subprocess
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

WARM_TIMEOUT = 900
PROGRAMS = (("c", "int main(void) { return 0; }\n"),
            ("cpp", "#include <string>\nint main() { return std::string(\"x\").size() - 1; }\n"))


_DONE: set[tuple[tuple[str, ...], tuple[str, ...], str]] = set()
_LOCK = threading.Lock()


def warm(cc: Sequence[str], cxx: Sequence[str], env: Mapping[str, str]) -> list[str]:
    """Link one C and one C++ program with ``cc``/``cxx`` from ``/``, once per process for a
    compiler pair and zig cache (~12 s with a filled cache on a busy 2-core machine); returns
    what failed (not fatal here: the unit's own build then reports the compiler's error)."""
    key = (tuple(cc), tuple(cxx), env.get("ZIG_GLOBAL_CACHE_DIR", ""))
    with _LOCK:
        if key in _DONE:
            return []
    failed = _link_all(cc, cxx, env)
    if not failed:
        with _LOCK:
            _DONE.add(key)
    return failed


def _link_all(cc: Sequence[str], cxx: Sequence[str], env: Mapping[str, str]) -> list[str]:
    failed: list[str] = []
    with tempfile.TemporaryDirectory(prefix="prebake-zig-warm-") as tmp:
        for (suffix, code), driver in zip(PROGRAMS, (cc, cxx), strict=True):
            src = Path(tmp) / f"warm.{suffix}"
            src.write_text(code)
            # C: an executable and a shared library (crt1, libc_nonshared, crti/crtn);
            # C++: a shared library (libc++ as a shared library such as onnxruntime links it)
            shapes = [(), ("-shared", "-fPIC")] if suffix == "c" else [("-shared", "-fPIC")]
            for extra in shapes:
                out = Path(tmp) / f"warm-{suffix}{'-shared' if extra else ''}"
                try:
                    proc = subprocess.run([*driver, *extra, str(src), "-o", str(out)], cwd="/",
                                          env=dict(env), capture_output=True, text=True,
                                          timeout=WARM_TIMEOUT, check=False,
                                          stdin=subprocess.DEVNULL)
                    if proc.returncode != 0:
                        failed.append(f"{driver[-1]} {' '.join(extra)}: "
                                      f"{(proc.stderr or proc.stdout).strip()[:200]}")
                except (OSError, subprocess.TimeoutExpired) as exc:
                    failed.append(f"{type(exc).__name__}: {exc}")
    return failed
