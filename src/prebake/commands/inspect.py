"""``prebake inspect PATH… [--json] [--symbols] [--deep]``: what each binary really is.

Paths may be binaries, static archives, folders, release assets or upstream packages (npm
``.tgz``, PyPI ``.whl``, ``.zip``, ``.tar.*``): ``prebake.inspect.resolve`` finds every binary
anywhere inside, packages unpacked safely into a temporary folder that is removed afterwards.
A path that cannot be read gets an ``error`` entry; the exit code is 2 only when every path
fails, so one odd file does not hide the facts of the others.

The reading itself (a process pool for several binaries, results written in input order) is
``prebake.inspect.runner``'s; this module parses the line, resolves the paths to its targets
and prints what they give. The runner is imported on use: every command module is loaded to
build the parser, and ``prebake --version`` loads no reader.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

    from prebake.inspect.runner import Target


NAME = "inspect"
HELP = "show the facts of binaries, archives or release assets (format, arch, EH, LTO, floors)"
ORDER = 30
# what inspect unpacks and walks (release assets and upstream packages): the resolver's list
ASSET_SUFFIXES = (".tar.xz", ".txz", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar", ".whl",
                  ".zip")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "paths", nargs="+", metavar="PATH",
        help="binaries, archives, folders, .tar.xz assets or packages (.tgz, .whl, .zip, .tar.*)"
    )
    p.add_argument("--json", action="store_true", help="machine-readable output (schema_version 1)")
    p.add_argument(
        "--symbols",
        action="store_true",
        help="list defined, undefined and exported symbols (with demangled names)",
    )
    p.add_argument(
        "--deep",
        action="store_true",
        help="add per-family wasm instruction counts and Asyncify's instrumentation count to "
             "the details (every instruction is decoded without it)",
    )
    p.add_argument(
        "--allowed-signers",
        metavar="FILE",
        help="check an asset's <asset>.sig against this allowed-signers file "
        "(default: an 'allowed_signers' file next to the asset)",
    )


def _say_error(path: str, error: str) -> None:
    from rich.markup import escape

    from prebake.commands._common import err_console

    err_console().print(f"prebake: error: {escape(path)}: {escape(error)}")


def run(args: argparse.Namespace) -> int:
    from prebake.inspect.runner import Mode, results, write
    from prebake.jsonio import SCHEMA_VERSION

    mode = Mode(symbols=args.symbols, deep=args.deep, json=args.json,
                color=not args.json and _color())
    out = sys.stdout
    with ExitStack() as stack:
        targets = [t for raw in args.paths for t in binaries(raw, stack)]
        if args.json:
            out.write('{\n  "results": [')
        failed = 0
        readable: set[str] = set()  # a path that failed shows its error and nothing else
        for target, result in zip(targets, results(targets, mode, stack), strict=True):
            write(result, _say_error)
            failed += result.failed
            if not result.failed:
                readable.add(target.arg)
        trust = _trust(args, readable)
        if args.json:
            out.write("\n  ]" if targets else "]")
            out.write(',\n  "schema_version": ' + str(SCHEMA_VERSION))
            if trust:
                from prebake.inspect.render import json_value

                out.write(',\n  "trust": ' + json_value(trust, "  "))
            out.write("\n}\n")
        elif trust:
            from prebake.commands._common import console
            from prebake.trust.summary import trust_lines

            for t in trust:
                for line in trust_lines(t):
                    console().print(line, markup=False, highlight=False)
    if failed == len(targets):
        return 2
    return 1 if any(t["signature"]["status"] == "invalid" or t["provenance_error"]
                    for t in trust) else 0


def _color() -> bool:
    """Styles for a terminal (bold paths, dim evidence), none for pipes, files or NO_COLOR."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def _trust(args: argparse.Namespace, readable: set[str]) -> list[dict[str, Any]]:
    """Provenance and signature status of each readable ``.tar.xz`` asset named."""
    assets = [Path(raw) for raw in args.paths
              if raw.endswith(".tar.xz") and raw in readable and Path(raw).is_file()]
    if not assets:
        return []  # prebake.trust imports the SBOM and provenance models: 0.4 s of start-up
    from prebake.trust.consumer import asset_status

    allowed = Path(args.allowed_signers) if args.allowed_signers else None
    return [asset_status(p, allowed) for p in assets]


# --------------------------------------------------------------------------------------------
# what to read: the binaries of each command-line path


def binaries(arg: str, stack: ExitStack) -> Iterator[Target]:
    """The binaries of one command-line path, as ``prebake.inspect.resolve`` finds them: the
    file itself, every binary anywhere below a folder or inside a release asset or upstream
    package (unpacked into a temporary folder that ``stack`` removes once everything is read),
    named ``package!inner/path``. A path that cannot be read is one error; a symlink leaving
    the tree is one error naming it."""
    for t in _binaries(Path(arg), stack):
        t.arg = arg
        yield t


def _binaries(path: Path, stack: ExitStack) -> Iterator[Target]:
    from prebake.inspect.runner import Target

    name = str(path)
    # a file not named like a package is read as a binary (or gets its error) by a worker:
    # nothing is opened or imported here for it (176 archives: the parent's start-up is the
    # only part of a run that does not use every core)
    plain = not name.lower().endswith(ASSET_SUFFIXES)
    if plain:
        try:
            st = path.stat()
        except OSError:
            st = None
        if st is not None and stat.S_ISREG(st.st_mode):
            yield Target(name, path, size=st.st_size)
            return
    from prebake.errors import PrebakeError
    from prebake.inspect.resolve import is_binary, resolve
    from prebake.inspect.runner import reason

    try:
        if path.is_file() and is_binary(path):  # a binary named like a package
            yield Target(name, path)
            return
        if not path.exists() and not path.is_symlink():  # a link loop: the resolver says so
            yield Target(name, error="no such file or folder")
            return
        import tempfile

        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="prebake-inspect-")))
        found = resolve([path], tmp)
        labels = tuple(found.labels)
        targets = [Target(b.shown, b.path, (str(b.path), b.shown) if b.shown != str(b.path)
                          else None, labels=labels,
                          root=str(b.root) if b.root is not None else None)
                   for b in found.binaries]
        targets += [Target(esc.split(" -> ")[0], error=f"symlink leaves the tree ({esc}); "
                           "not followed") for esc in found.escapes]
        targets += [Target(shown, error=why) for shown, why in found.unreadable]
        what = "package" if path.is_file() else "folder"
        yield from targets or [Target(name, error=f"{what} holds no binary prebake knows")]
    except PrebakeError as exc:
        yield Target(name, error=reason(exc, name))
    except OSError as exc:
        yield Target(name, error=exc.strerror or str(exc))
