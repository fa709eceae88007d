"""``prebake inspect PATH… [--json] [--symbols] [--deep]``: what each binary really is.

Paths may be binaries, static archives, folders, release assets or upstream packages (npm
``.tgz``, PyPI ``.whl``, ``.zip``, ``.tar.*``): ``prebake.inspect.resolve`` finds every binary
anywhere inside, packages unpacked safely into a temporary folder that is removed afterwards.
A path that cannot be read gets an ``error`` entry; the exit code is 2 only when every path
fails, so one odd file does not hide the facts of the others.

One binary is read here and its output written to stdout as it is made. Several are read by
a ``concurrent.futures`` process pool (one worker per usable core), and this process writes
the results to stdout in input order as they complete, so the output is the bytes of a serial
run. A result's text comes back with it while it is small (the facts of an archive); a bigger
one (its symbol lists) is written by the worker to a file of its own in a private folder and
copied from there, so that no big result waits in this process's memory.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, TextIO

from prebake.cores import usable_cores

if TYPE_CHECKING:
    import argparse

    from prebake.inspect.facts import Facts


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
        for target, result in zip(targets, _results(targets, mode, stack), strict=True):
            _write(result)
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


# --------------------------------------------------------------------------------------------
# reading: one result per target, here or in the pool


@dataclass
class Target:
    """One result to produce: the binary ``file`` shown as ``name``, or an ``error`` for
    ``name``. ``rename`` maps the file's path to what is shown (asset members)."""

    name: str
    file: Path | None = None
    rename: tuple[str, str] | None = None
    error: str | None = None
    size: int = 0  # bytes of the file, when known: the biggest are read first
    arg: str = ""  # the command-line path it comes from
    # (temporary unpack folder, package name): evidence names the package, not the folder
    labels: tuple[tuple[str, str], ...] = ()
    root: str | None = None  # the tree it was found in (what a thin archive may name)


@dataclass(frozen=True)
class Mode:
    """The command's output options, as a worker needs them."""

    symbols: bool
    deep: bool
    json: bool
    color: bool


# A worker's result text up to this size travels back with the result; a bigger one goes
# through a file. Creating and removing a file per result costs more than the facts of a
# whole archive take to send (docs/architecture.md, "The inspect path").
INLINE_MAX = 1 << 18


@dataclass
class Result:
    """One target's output: already on stdout (read here), the ``text`` itself or the
    ``file`` holding it (a worker's), and the error to print for the human view."""

    text: str | None = None
    file: str | None = None
    error: tuple[str, str] | None = None
    failed: bool = False


class _Spill:
    """A worker's sink for one result: the text in memory up to ``INLINE_MAX`` characters,
    then all of it in the file ``path``."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.parts: list[str] = []
        self.size = 0
        self.fh: TextIO | None = None

    def write(self, text: str) -> None:
        if self.fh is not None:
            self.fh.write(text)
            return
        self.parts.append(text)
        self.size += len(text)
        if self.size > INLINE_MAX:
            self.fh = open(self.path, "w", encoding="utf-8")  # noqa: SIM115 (closed in end)
            self.fh.write("".join(self.parts))
            self.parts.clear()

    def end(self, result: Result) -> None:
        if self.fh is None:
            result.text = "".join(self.parts)
        else:
            self.fh.close()
            result.file = self.path


def _results(targets: list[Target], mode: Mode, stack: ExitStack) -> Iterator[Result]:
    """Each target's result in input order: read here for one target (or one core), else by
    a pool, the biggest files first so that no worker is left with a big one at the end."""
    workers = min(len(targets), usable_cores())
    if workers <= 1:
        for i, target in enumerate(targets):
            yield job(mode, None, target, i)
        return
    import multiprocessing
    import tempfile
    from concurrent.futures import ProcessPoolExecutor

    folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="prebake-inspect-out-"))
    # forked on Linux (a worker starts as this process is, nothing re-imported); each worker
    # loads the readers itself, all of them at once, while this process hands out the work
    context = None
    if sys.platform == "linux":
        import gc

        gc.freeze()  # the workers' collections then leave the pages they share with us alone
        context = multiprocessing.get_context("fork")
    pool = ProcessPoolExecutor(workers, mp_context=context, initializer=_warm,
                               initargs=(mode.symbols,))
    stack.enter_context(pool)
    order = sorted(range(len(targets)), key=lambda i: -targets[i].size)
    futures = {i: pool.submit(job, mode, folder, targets[i], i) for i in order}
    try:
        for i in range(len(targets)):
            yield futures[i].result()
    finally:  # an error or a reader that stopped early: the work not started is dropped
        for f in futures.values():
            f.cancel()


def _warm(symbols: bool) -> None:
    """What every worker needs: the readers of this machine's own binaries (archives, ELF)
    and, for symbols, the demangler; anything else is loaded on first use, as serially."""
    from prebake.inspect import registry, render  # noqa: F401 (imported to be loaded)

    for name in ("archive", "elf"):
        registry.module_readers(name)
    if symbols:
        from prebake.inspect.demangle import demangle_once

        demangle_once("_Z1fv")  # loads the C++ runtime's demangler


def reason(exc: Exception, name: str) -> str:
    return getattr(exc, "reason", None) or str(exc).removeprefix(f"{name}: ")


def _facts_of(target: Target, mode: Mode) -> Facts:
    from prebake.errors import PrebakeError
    from prebake.inspect import ParseOptions, inspect
    from prebake.inspect.facts import Facts

    if target.error is not None or target.file is None:
        return Facts(path=target.name, error=target.error)
    try:
        # the human view shows members' symbols only: no archive-level lists to build
        facts = inspect(target.file, ParseOptions(symbols=mode.symbols, deep=mode.deep,
                                                  archive_lists=mode.json, root=target.root))
    except PrebakeError as exc:
        return Facts(path=target.name, error=reason(exc, str(target.file)))
    except OSError as exc:
        return Facts(path=target.name, error=exc.strerror or str(exc))
    except MemoryError:  # under a memory limit: this file's error, the others still read
        return Facts(path=target.name, error="too big to read into the memory this process "
                                             "may use")
    if target.rename is not None:
        old, new = target.rename
        for f in facts.walk():
            f.path = f.path.replace(old, new, 1)
    if target.labels:
        for f in facts.walk():
            for tmp, shown in target.labels:
                f.evidence = {k: [e.replace(tmp, shown) for e in ev]
                              for k, ev in f.evidence.items()}
    return facts


def job(mode: Mode, folder: str | None, target: Target, index: int) -> Result:
    """Read the ``index``-th target and write its output (JSON object or human text): to
    stdout where ``folder`` is None, else to a file of its own in ``folder``."""
    from prebake.inspect.render import json_pieces, text_pieces

    facts = _facts_of(target, mode)
    result = Result(failed=facts.error is not None)
    if not mode.json and facts.error is not None:
        result.error = (facts.path, facts.error)
        return result
    spill = None if folder is None else _Spill(str(Path(folder) / f"{index}.out"))
    sink: Callable[[str], Any] = sys.stdout.write if spill is None else spill.write
    try:
        if mode.json:
            sink(",\n    " if index else "\n    ")
            json_pieces(facts, sink, symbols=mode.symbols)
        else:
            text_pieces(facts, sink, symbols=mode.symbols, color=mode.color)
    finally:
        if spill is not None:
            spill.end(result)
    return result


def _copy(src: BinaryIO, dest: BinaryIO) -> None:
    """``src`` to ``dest``: by ``os.sendfile`` (no copy through this process) where ``dest``
    is a file or pipe that takes it, else by reads and writes."""
    dest.flush()
    sent = 0
    try:
        fd = dest.fileno()
        size = os.fstat(src.fileno()).st_size
        while sent < size:
            n = os.sendfile(fd, src.fileno(), sent, size - sent)
            if n == 0:
                break
            sent += n
        return
    except BrokenPipeError:  # the reader left: cli's handler ends the run quietly
        raise
    except (AttributeError, OSError, ValueError):  # no descriptor, or no sendfile to it
        pass
    import shutil

    src.seek(sent)
    shutil.copyfileobj(src, dest, 1 << 20)
    dest.flush()


def _write(result: Result) -> None:
    """A result to stdout (a worker's text, or its file copied, then removed) and its error
    to stderr."""
    if result.text:
        sys.stdout.write(result.text)
    if result.file is not None:
        out = sys.stdout
        out.flush()
        with open(result.file, "rb") as fh:
            if hasattr(out, "buffer"):
                _copy(fh, out.buffer)
            else:  # a text-only stream (pytest's capture)
                out.write(fh.read().decode())
        Path(result.file).unlink()
    if result.error is not None:
        from rich.markup import escape

        from prebake.commands._common import err_console

        path, error = result.error
        err_console().print(f"prebake: error: {escape(path)}: {escape(error)}")
