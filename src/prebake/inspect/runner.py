"""Reading ``prebake inspect``'s targets and writing their output: the speed machinery.

One binary is read in this process and its output written to stdout as it is made. Several are
read by one worker per usable core (forked children on Linux, a ``concurrent.futures`` pool
elsewhere), and this process writes the results to stdout in input order as they complete, so
the output is the bytes of a serial run. A result's text comes back with it while it is small
(the facts of an archive); a bigger one (its symbol lists) is written by the worker to a file of
its own in a private folder and copied from there, so that no big result waits in this
process's memory.

The command (``prebake.commands.inspect``) parses the line, resolves the paths to ``Target``
values and calls ``results`` and ``write``; nothing here parses arguments or prints a table.
"""

from __future__ import annotations

import contextlib
import gc
import marshal
import os
import select
import shutil
import signal
import struct
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, NoReturn, TextIO

from prebake.cores import usable_cores
from prebake.errors import PrebakeError
from prebake.inspect import ParseOptions, inspect, registry
from prebake.inspect.demangle import demangle_once
from prebake.inspect.facts import Facts
from prebake.inspect.render import json_pieces, text_pieces


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


def results(targets: list[Target], mode: Mode, stack: ExitStack) -> Iterator[Result]:
    """Each target's result in input order: read here for one target (or one core), else by
    one worker per core, the biggest files first so that no worker is left with a big one at
    the end: forked children on Linux (``_forked``), a process pool elsewhere."""
    workers = min(len(targets), usable_cores())
    if workers <= 1:
        for i, target in enumerate(targets):
            yield job(mode, None, target, i)
        return
    import tempfile  # lazy: one target never needs the folder (shutil, random, bz2, lzma)

    folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="prebake-inspect-out-"))
    if sys.platform == "linux":
        yield from _forked(targets, mode, folder, workers)
        return
    yield from _pooled(targets, mode, folder, workers, stack)


def shares(targets: list[Target], workers: int) -> list[list[int]]:
    """The targets' indices dealt to ``workers`` workers, biggest first, each to the one with
    the fewest bytes so far (longest processing time first: within a third of the best)."""
    out: list[list[int]] = [[] for _ in range(workers)]
    load = [0] * workers
    for i in sorted(range(len(targets)), key=lambda i: -targets[i].size):
        w = load.index(min(load))
        out[w].append(i)
        load[w] += max(1, targets[i].size)
    return out


_LEN = struct.Struct("<I")


def _forked(targets: list[Target], mode: Mode, folder: str, workers: int) -> Iterator[Result]:
    """The workers as forked children, each given its share up front and sending each result
    back through a pipe as it is made (``marshal``). No pool: its imports (multiprocessing,
    concurrent.futures, logging, subprocess, socket) cost this process more start-up than a
    facts run of LLVM's 176 archives takes to read, and a pool's workers wait for this process
    to hand out each next target: on two cores, with this process writing the output, they
    sat idle a third of the time. An error in a child is raised here as it was raised there
    (pickled); a child that dies is an error naming it; leaving early kills them."""
    gc.freeze()  # the children's collections then leave the pages they share with us alone
    children: dict[int, list[Any]] = {}  # read end -> [pid, unread bytes, results to come]
    try:
        for share in shares(targets, workers):
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:  # the child: never returns
                os.close(r)
                _child(w, share, targets, mode, folder)
            os.close(w)
            children[r] = [pid, b"", len(share)]
        done: dict[int, Result] = {}
        for i in range(len(targets)):
            while i not in done:
                _receive(children, done)
            yield done.pop(i)
    finally:
        for fd, (pid, _, left) in children.items():
            os.close(fd)
            if not pid:
                continue  # reaped already
            if left:  # not finished: its work is dropped (its files go with the folder)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)


def _receive(children: dict[int, list[Any]], done: dict[int, Result]) -> None:
    """Read what the children have sent (waiting until one sends) into ``done``."""
    ready, _, _ = select.select([fd for fd, st in children.items() if st[2]], [], [])
    for fd in ready:
        st = children[fd]
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            pid, st[0] = st[0], 0  # reaped here, not again
            _, status = os.waitpid(pid, 0)
            st[2] = 0
            raise PrebakeError(f"an inspect worker (pid {pid}) ended before its results "
                               f"({_said(status)})")
        st[1] += chunk
        while len(st[1]) >= _LEN.size:
            (n,) = _LEN.unpack_from(st[1])
            if len(st[1]) < _LEN.size + n:
                break
            record, st[1] = st[1][_LEN.size : _LEN.size + n], st[1][_LEN.size + n :]
            i, text, file, error, failed, raised = marshal.loads(record)
            if raised is not None:
                import pickle  # lazy: only an error in a child comes this way (6M instructions)

                raise pickle.loads(raised)
            done[i] = Result(text, file, tuple(error) if error else None, failed)
            st[2] -= 1


def _said(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by signal {os.WTERMSIG(status)}"
    return f"exit status {os.WEXITSTATUS(status)}"


def _send(fd: int, record: tuple[Any, ...]) -> None:
    data = marshal.dumps(record)
    view = memoryview(_LEN.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view):]


def _child(fd: int, share: list[int], targets: list[Target], mode: Mode, folder: str) -> NoReturn:
    """A forked worker: read its share in order, send each result, exit without running the
    parent's exit handlers (``os._exit``); an exception goes back pickled, as a pool's would."""
    code = 0
    try:
        _warm(mode.symbols)
        for i in share:
            r = job(mode, folder, targets[i], i)
            _send(fd, (i, r.text, r.file, r.error, r.failed, None))
    except BaseException as exc:  # any error, Ctrl-C included: the parent raises it
        code = 1
        import pickle  # lazy: only a child's error needs it

        try:
            raised = pickle.dumps(exc)
        except Exception:  # an exception that does not pickle: its words
            raised = pickle.dumps(RuntimeError(f"{type(exc).__name__}: {exc}"))
        with contextlib.suppress(OSError):
            _send(fd, (-1, None, None, None, True, raised))
    os._exit(code)


def _pooled(targets: list[Target], mode: Mode, folder: str, workers: int,
            stack: ExitStack) -> Iterator[Result]:
    """The workers as a ``concurrent.futures`` process pool, where there is no ``fork``
    (spawned workers import prebake afresh and each loads the readers)."""
    from concurrent.futures import ProcessPoolExecutor  # lazy: the pool, where there is no fork

    pool = ProcessPoolExecutor(workers, initializer=_warm, initargs=(mode.symbols,))
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
    for name in ("archive", "elf"):
        registry.module_readers(name)
    if symbols:
        demangle_once("_Z1fv")  # loads the C++ runtime's demangler


def reason(exc: Exception, name: str) -> str:
    return getattr(exc, "reason", None) or str(exc).removeprefix(f"{name}: ")


def _facts_of(target: Target, mode: Mode) -> Facts:
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
    src.seek(sent)
    shutil.copyfileobj(src, dest, 1 << 20)
    dest.flush()


def write(result: Result, say_error: Callable[[str, str], None]) -> None:
    """A result to stdout (a worker's text, or its file copied, then removed), and its error
    (path, reason) to ``say_error``: how errors look is the command's."""
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
        say_error(*result.error)
