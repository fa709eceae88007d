"""``prebake init [DIR]``: a workspace skeleton that plans and builds on this machine at once."""

from __future__ import annotations

import argparse
from pathlib import Path

NAME = "init"
HELP = "write a new workspace for the platforms whose compilers this machine has"
ORDER = 5


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", nargs="?", default=".", metavar="DIR",
                   help="folder of the new workspace (default: the current folder)")
    p.add_argument("--name", metavar="NAME",
                   help="project name (default: from the folder's name)")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    import os

    from prebake.commands._common import console, print_json
    from prebake.errors import PrebakeError
    from prebake.jsonio import SCHEMA_VERSION
    from prebake.skeleton import check_project, detect, project_name, render, write

    dest = Path(args.dir)
    if (dest / "prebake.toml").exists():
        raise PrebakeError(f"{dest / 'prebake.toml'}: already exists (prebake init writes a new "
                           "workspace)")
    project = args.name or project_name(dest)
    check_project(project)
    found = detect({"PATH": os.environ.get("PATH", os.defpath), "HOME": os.environ.get(
        "HOME", ""), "NODE_PATH": os.environ.get("NODE_PATH", "/usr/share/nodejs")})
    if not found:
        raise PrebakeError("no compiler of a known toolchain family answers on this machine's "
                           "PATH (gcc, clang, emcc, mingw-w64, python -m ziglang)")
    written = write(dest, render(found, project))
    if args.json:
        print_json({"schema_version": SCHEMA_VERSION, "workspace": str(dest),
                    "project": project, "files": [str(p) for p in written],
                    "platforms": [{"name": d.candidate.name, "pin": d.candidate.pin,
                                   "version": d.version, "preset": d.preset}
                                  for d in found]})
        return 0
    out = console()
    out.print(f"wrote {dest / 'prebake.toml'} ({project}) with {len(found)} platform(s):",
              markup=False)
    for d in found:
        preset = f", contract {d.preset}" if d.preset else ""
        out.print(f"  {d.candidate.name}: {d.candidate.pin} {d.version}{preset}", markup=False)
    out.print(f"next: prebake -C {dest} plan", markup=False)
    return 0
