"""``prebake toolchain``: what each platform's compiler really is, and installing the pinned ones.

``toolchain list [--json]`` asks every platform's compiler (resolved through ``PATH`` as the
build runs it) and shows family, pin, the command, the release it reports and ``ok | mismatch |
missing | unpinned``. ``toolchain install [--platform P]`` provisions what a package registry
can provide at exactly the pin (zig from PyPI; emsdk where its repository is reachable) and
says plainly what it cannot. ``toolchain cmake [--platform P]`` prints the CMake toolchain file
(and its compiler wrappers) prebake writes for the platform's CMake recipes, in the portable form
the input hash reads (``{python}``, ``{work}``, ``{prefix}`` for this machine's paths).
``toolchain meson [--platform P]`` prints the Meson cross file (native file when the platform
is the build machine) that ``{meson_cross}`` hands to ``meson setup``, in the same portable
form; both are rendered from the one platform-tools value (``prebake.toolchain.platformtools``).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from prebake.workspace.model import Platform, Workspace

NAME = "toolchain"
HELP = "list each platform's toolchain as its compiler reports it; install the pinned ones"
ORDER = 15


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="toolchain_command", metavar="WHAT", required=True)
    ls = sub.add_parser("list", help="family, pin, command, version found and status per "
                                     "platform")
    ls.add_argument("--platform", metavar="P", action="append",
                    help="a platform (repeatable; default: every platform)")
    ls.add_argument("--json", action="store_true", help="machine-readable output")
    inst = sub.add_parser("install", help="install pinned toolchains into prebake's cache "
                                          "(zig from PyPI; emsdk where reachable)")
    inst.add_argument("--platform", metavar="P", action="append",
                      help="a platform (repeatable; default: every platform)")
    inst.add_argument("--json", action="store_true", help="machine-readable output")
    cm = sub.add_parser("cmake", help="the CMake toolchain file prebake writes for each "
                                      "platform ({cmake_toolchain}), as the input hash reads it")
    cm.add_argument("--platform", metavar="P", action="append",
                    help="a platform (repeatable; default: every platform)")
    cm.add_argument("--json", action="store_true", help="machine-readable output")
    me = sub.add_parser("meson", help="the Meson cross (or native) file prebake writes for "
                                      "each platform ({meson_cross}), as the input hash reads "
                                      "it")
    me.add_argument("--platform", metavar="P", action="append",
                    help="a platform (repeatable; default: every platform)")
    me.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    from prebake.commands._common import find_workspace
    from prebake.workspace import load_workspace

    ws = load_workspace(find_workspace(args.workspace))
    names = [n for p in (args.platform or [None]) for n in ws.platform_names(p)]
    platforms = [ws.platforms[n] for n in dict.fromkeys(names)]
    if args.toolchain_command == "list":
        return _list(ws, platforms, args.json)
    if args.toolchain_command == "cmake":
        return _cmake(platforms, args.json)
    if args.toolchain_command == "meson":
        return _meson(platforms, args.json)
    return _install(ws, platforms, args.json)


def _cmake(platforms: list[Platform], as_json: bool) -> int:
    """Each platform's toolchain file; a table that cannot make one is one error (exit 2)."""
    from prebake.commands._common import print_json
    from prebake.jsonio import SCHEMA_VERSION
    from prebake.toolchain.cmakefile import portable
    from prebake.toolchain.platformtools import is_cross

    made = [(p, portable(p, shared_prefix=False)) for p in platforms]
    if as_json:
        print_json({"schema_version": SCHEMA_VERSION, "platforms": [
            {"platform": p.name, "cross": is_cross(p), "file": f.text,
             "wrappers": dict(sorted(f.wrappers.items()))} for p, f in made]})
        return 0
    import sys

    for i, (p, f) in enumerate(made):
        if i:
            sys.stdout.write("\n")
        sys.stdout.write(f"# ==== platform {p.name} ({'cross' if is_cross(p) else 'native'})"
                         " ====\n" + f.rendered())
    return 0


def _meson(platforms: list[Platform], as_json: bool) -> int:
    """Each platform's Meson machine file; one that cannot be made is one error (exit 2)."""
    import sys

    from prebake.commands._common import print_json
    from prebake.jsonio import SCHEMA_VERSION
    from prebake.toolchain import mesonfile, platformtools

    made = [mesonfile.render(platformtools.portable(p)) for p in platforms]
    if as_json:
        print_json({"schema_version": SCHEMA_VERSION, "platforms": [
            {"platform": f.platform, "cross": f.cross, "file_name": f.name, "file": f.text,
             "wrappers": dict(sorted(f.wrappers.items()))} for f in made]})
        return 0
    for i, f in enumerate(made):
        if i:
            sys.stdout.write("\n")
        sys.stdout.write(f"# ==== platform {f.platform} ({'cross' if f.cross else 'native'}:"
                         f" {f.name}) ====\n" + f.rendered())
    return 0


STATUS_COLOUR = {"ok": "green", "unpinned": "cyan", "mismatch": "red", "missing": "red"}


def _list(ws: Workspace, platforms: list[Platform], as_json: bool) -> int:
    from rich.markup import escape
    from rich.table import Table

    from prebake.commands._common import console, print_json
    from prebake.jsonio import SCHEMA_VERSION
    from prebake.printable import printable
    from prebake.toolchain.verify import verify_platforms

    verdicts = verify_platforms(platforms, ws.pins)
    if as_json:
        print_json({"schema_version": SCHEMA_VERSION,
                    "workspace": str(ws.root),
                    "platforms": [v.to_json() for v in verdicts.values()]})
        return 0
    t = Table(title="prebake toolchain list")
    for col in ("platform", "family", "pin", "command", "version", "status"):
        t.add_column(col)
    for v in verdicts.values():
        pin = f"{v.pin} = {v.pinned}" if v.pin else ""
        command = v.cc.command or " ".join(v.cc.argv[:1])
        if len(v.cc.argv) > 2 and v.cc.argv[1] == "-m":  # python -m ziglang
            command = f"{command} -m {v.cc.argv[2]}"
        colour = STATUS_COLOUR[v.status.value]
        # the version is what the compiler printed: text, made printable
        t.add_row(v.platform, v.family or "?", escape(pin), escape(command),
                  escape(printable(v.cc.version or "-")), f"[{colour}]{v.status.value}[/]")
    out = console()
    out.print(t)
    for v in verdicts.values():
        if v.reason:
            out.print(v.reason, markup=False)
    return 0


def _install(ws: Workspace, platforms: list[Platform], as_json: bool) -> int:
    from prebake.commands._common import console, print_json
    from prebake.jsonio import SCHEMA_VERSION
    from prebake.toolchain.provision import Outcome, provision

    done = [provision(ws, p) for p in platforms]
    failed = any(d.outcome is Outcome.CANNOT for d in done)
    if as_json:
        print_json({"schema_version": SCHEMA_VERSION, "ok": not failed,
                    "platforms": [d.to_json() for d in done]})
    else:
        for d in done:
            console().print(f"{d.outcome.value:>9}  {d.message}", markup=False)
    return 1 if failed else 0
