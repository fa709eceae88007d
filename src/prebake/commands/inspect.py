"""``prebake inspect PATH… [--json] [--symbols] [--deep]``: what each binary really is.

Paths may be binaries, static archives, folders, release assets or upstream packages (npm
``.tgz``, PyPI ``.whl``, ``.zip``, ``.tar.*``): ``prebake.inspect.resolve`` finds every binary
anywhere inside, packages unpacked safely into a temporary folder that is removed afterwards.
A path that cannot be read gets an ``error`` entry; the exit code is 2 only when every path
fails, so one odd file does not hide the facts of the others.

Each binary is read in a worker process (one per usable core) and its output — JSON object or
human text — is produced there and written here as soon as it and every earlier one are done:
the output is streamed in input order, the same bytes as a serial run, and a worker spills a
big result to a temporary file instead of holding it (``_inspect_work.SPILL_AT``). The pool
is forked by ``prebake.commands._early`` when the command line names several paths, before
the line is parsed.
"""

from __future__ import annotations

import contextlib
import functools
import os
import stat
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from prebake.commands._inspect_work import Mode, Piece, Target, job, print_errors, reason

if TYPE_CHECKING:
    import argparse


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
        help="run expensive passes too (e.g. a full wasm code decode)",
    )
    p.add_argument(
        "--allowed-signers",
        metavar="FILE",
        help="check an asset's <asset>.sig against this allowed-signers file "
        "(default: an 'allowed_signers' file next to the asset)",
    )


def run(args: argparse.Namespace) -> int:
    from prebake.commands import _early
    from prebake.commands._pool import ordered_map, usable_cores
    from prebake.jsonio import SCHEMA_VERSION

    opts = Mode(symbols=args.symbols, deep=args.deep, json=args.json,
                color=not args.json and _color())
    # several paths: several results, so the workers are forked now (if ``prestart`` has not)
    # and warm up while this process finds the binaries; one path (a folder, a package) may
    # hold one binary or many: its pool waits until that is known
    pool = _early.take() or _early.pool_for(len(args.paths), args.symbols)
    with ExitStack() as stack:
        try:
            targets = [t for raw in args.paths for t in binaries(raw, stack)]
            for i, target in enumerate(targets):
                target.index = i
            workers = usable_cores() if len(targets) > 1 else 1
            if workers > 1:
                opts = replace(opts, spill=_spill_folder(stack))
            else:
                opts = replace(opts, direct=True)
                if pool is not None:
                    pool.close()  # several paths, one binary among them: no work for it
                    pool = None
            if pool is None and workers > 1:
                pool = _early.pool_for(len(targets), args.symbols)
            out = sys.stdout
            if args.json:
                out.write('{\n  "results": [')
            failed = 0
            readable: set[str] = set()  # a path that failed shows its error and nothing else
            work = functools.partial(job, opts)
            if pool is not None:
                # biggest first: the last items any worker takes are small ones
                pieces = pool.map(work, targets, sorted(
                    range(len(targets)), key=lambda i: -targets[i].size))
            else:  # one binary, or no fork here (spawned workers)
                pieces = ordered_map(work, targets, workers)
            for target, piece in zip(targets, pieces, strict=True):
                failed += piece.failed
                if not piece.failed:
                    readable.add(target.arg)
                _write(piece)
        finally:
            if pool is not None:
                pool.close()  # before the unpacked packages and spill files are removed
        trust = _trust(args, readable)
        if args.json:
            out.write("\n  ]" if targets else "]")
            out.write(',\n  "schema_version": ' + str(SCHEMA_VERSION))
            if trust:
                from prebake.inspect.render import json_value

                out.write(',\n  "trust": ' + json_value(trust, "  "))
            out.write("\n}\n")
        elif trust:  # rich and the trust renderer only for assets: 20 ms after the work
            from prebake.commands._common import console
            from prebake.trust.render import trust_lines

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
    from prebake.trust.hooks import asset_status

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

    try:
        if path.is_file() and is_binary(path):  # a binary named like a package
            yield Target(name, path)
            return
        if not path.exists():
            yield Target(name, error="no such file or folder")
            return
        import tempfile

        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="prebake-inspect-")))
        found = resolve([path], tmp)
        labels = tuple(found.labels)
        targets = [Target(b.shown, b.path, (str(b.path), b.shown) if b.shown != str(b.path)
                          else None, labels=labels) for b in found.binaries]
        targets += [Target(esc.split(" -> ")[0], error=f"symlink leaves the tree ({esc}); "
                           "not followed") for esc in found.escapes]
        what = "package" if path.is_file() else "folder"
        yield from targets or [Target(name, error=f"{what} holds no binary prebake knows")]
    except PrebakeError as exc:
        yield Target(name, error=reason(exc, name))
    except OSError as exc:
        yield Target(name, error=exc.strerror or str(exc))


def _spill_folder(stack: ExitStack) -> str:
    """A private folder for the workers' big outputs, removed by ``stack``.

    ``tempfile``'s own rules (``TMPDIR``, an unguessable name, mode 0700, never an existing
    folder) without importing it: ``tempfile`` pulls in ``shutil`` and ``random``, start-up
    time that the one serial part of a many-file run pays.
    """
    base = Path(os.environ.get("TMPDIR") or "/tmp")
    for _ in range(100):
        path = base / f"prebake-inspect-out-{os.urandom(8).hex()}"
        try:
            path.mkdir(0o700)
        except FileExistsError:
            continue
        stack.callback(_remove_spill, path)
        return str(path)
    raise FileExistsError(f"{base}: no free name for a spill folder")


def _remove_spill(path: Path) -> None:
    """The spill folder and what a stopped run left in it (flat: workers write files only)."""
    with contextlib.suppress(OSError):
        for entry in path.iterdir():
            with contextlib.suppress(OSError):
                entry.unlink()
        path.rmdir()


def _write(piece: Piece) -> None:
    out = sys.stdout
    if piece.text or piece.file:
        out.flush()
        binary = getattr(out, "buffer", None)
        if piece.file is not None:
            _copy_file(piece.file, binary)
            Path(piece.file).unlink()
        elif binary is not None:
            binary.write(piece.text)
            binary.flush()
        else:
            out.write(piece.text.decode())
    print_errors(piece.errors)


def _copy_file(path: str, binary: IO[bytes] | None) -> None:
    """A spilled result to stdout: ``sendfile`` into a real file or pipe, else read/write."""
    with open(path, "rb") as fh:
        try:
            fd = binary.fileno() if binary is not None else -1
        except (AttributeError, OSError, ValueError):  # pytest's capture, a StringIO
            fd = -1
        if fd >= 0:
            size, sent = os.fstat(fh.fileno()).st_size, 0
            try:
                while sent < size:
                    n = os.sendfile(fd, fh.fileno(), sent, size - sent)
                    if n == 0:
                        break
                    sent += n
                return
            except OSError:  # no sendfile to this kind of file: copy the rest
                fh.seek(sent)
        import shutil

        if binary is None:  # a text-only stream (rare): whole, so no character is split
            sys.stdout.write(fh.read().decode())
            return
        shutil.copyfileobj(fh, binary, 1 << 20)
        binary.flush()
