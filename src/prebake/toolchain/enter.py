"""Run one tool inside a toolchain environment's root, in the caller's folder.

A wrapper written by ``prebake toolchain install`` runs this under ``unshare --mount`` (a mount
namespace private to the one process tree, so nothing is left mounted when it ends): the host's
own folders (everything at the top of ``/`` that is not the system's: ``/work``, ``/root``,
``/tmp``…, plus the current folder wherever it is) are bound at the same paths inside the root,
with ``/dev`` and ``/proc``; then it changes root and runs the tool. Paths therefore mean the
same inside and outside, which is what lets a build started by prebake on the host write its
objects into the unit's own folders. Kept free of prebake's heavier imports: a build runs it for
every top-level tool call.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

# Top-level folders that belong to the root's own system, never bound over it.
SYSTEM = frozenset({"bin", "boot", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc",
                    "run", "sbin", "sys", "usr", "var", "lost+found"})
# The host's settings for its own Emscripten (Debian 12's) must not reach the root's.
DROPPED = ("EM_CACHE", "EM_CONFIG", "NODE_PATH", "EMSDK", "EM_PY")
# The root's own Emscripten cache, when the caller names one for it (a rebuild's empty cache,
# prebake.rebuild.isolation): EM_CACHE inside.
ENV_EM_CACHE = "PREBAKE_ENV_EM_CACHE"
INSIDE_PATH = "/usr/local/bin:/usr/bin:/bin"


def host_binds(cwd: str) -> list[str]:
    """The host folders bound into the root: non-system top-level ones, and ``cwd``'s own
    when it lies under a system folder (a cache under ``/var``)."""
    binds = sorted(f"/{e.name}" for e in os.scandir("/")
                   if e.is_dir(follow_symlinks=False) and e.name not in SYSTEM)
    if not any(cwd == b or cwd.startswith(b + "/") for b in binds) and cwd != "/":
        binds.append(cwd)
    return binds


def _mount(*args: str) -> None:
    proc = subprocess.run(["mount", *args], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"prebake environment: mount {' '.join(args)}: "
                         f"{proc.stderr.strip() or proc.returncode}")


def enter(root: Path, tool: str, args: list[str]) -> None:
    cwd = str(Path.cwd())
    for src in host_binds(cwd):
        target = root / src.lstrip("/")
        target.mkdir(parents=True, exist_ok=True)
        _mount("--bind", src, str(target))
    for sysdir in ("dev", "proc"):
        _mount("--rbind", f"/{sysdir}", str(root / sysdir))
    os.chroot(root)
    os.chdir(cwd)
    env = {k: v for k, v in os.environ.items() if k not in DROPPED and k != ENV_EM_CACHE}
    if os.environ.get(ENV_EM_CACHE):
        env["EM_CACHE"] = os.environ[ENV_EM_CACHE]
    env["PATH"] = INSIDE_PATH
    # the tool's own file, not the symlink PATH finds: a shell entry point that finds its
    # program from $0's folder (Debian sid's emnm: "$(dirname $0)/tools/emnm.py") fails
    # through /usr/bin's link and runs ".py"; argv[0] stays the name (ccache reads it)
    found = shutil.which(tool, path=INSIDE_PATH)
    try:
        os.execve(os.path.realpath(found) if found else tool, [tool, *args], env)
    except OSError as exc:
        raise SystemExit(f"prebake environment {root.name}: {tool}: {exc.strerror}") from None


if __name__ == "__main__":
    if len(sys.argv) < 3:
        raise SystemExit("usage: python -m prebake.toolchain.enter ROOT TOOL [ARG...]")
    enter(Path(sys.argv[1]), sys.argv[2], sys.argv[3:])
