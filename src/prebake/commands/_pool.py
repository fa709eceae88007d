"""An ordered process pool for commands that read many independent files (``inspect``).

Parsing is pure Python, so threads would share one core; worker processes use every core the
process may run on. Results come back in input order, so output stays the same as a serial
run; results that finish before an earlier, slower one wait in the parent (callers keep them
small: ``inspect`` spills big outputs to files).

On Linux the pool is a handful of forked workers and pipes, not ``concurrent.futures``: the
workers inherit the items (only an index crosses a pipe), pull the next one from one shared
task pipe as soon as they are free (4-byte writes and reads are atomic, so every index goes
to exactly one worker), and send each pickled result back on their own pipe. That is what a
``ProcessPoolExecutor`` does, without its 15 ms of imports, its feeder and manager threads
and a pickled call per item: on 176 LLVM archives its overhead was a fifth of the facts
summary's whole time. Elsewhere (no ``fork``) the standard executor with ``spawn`` is used.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import struct
import sys
from collections.abc import Callable, Generator, Sequence
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

_TASK = struct.Struct("<I")  # an item's index; END asks a worker to exit
_RESULT = struct.Struct("<IQ?")  # index, pickle length, whether it is an exception
_SIZE = struct.Struct("<Q")  # the length of a worker's pickled job
END = 0xFFFFFFFF


class WorkerDied(RuntimeError):
    """A worker process ended (a signal, the OOM killer) before sending a result."""


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask, e.g. ``taskset``), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


def ordered_map(fn: Callable[[T], R], items: Sequence[T],
                workers: int | None = None) -> Generator[R, None, None]:
    """``map(fn, items)`` over worker processes, in input order; in-process for one item or
    one core (no pool start-up for the common ``inspect lib.a``)."""
    n = min(len(items), usable_cores() if workers is None else workers)
    if n <= 1:
        yield from map(fn, items)
        return
    if forks():
        with Pool(n) as pool:
            yield from pool.map(fn, items)
        return
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    executor = ProcessPoolExecutor(n, mp_context=mp.get_context("spawn"))
    try:
        yield from executor.map(fn, items)
    finally:
        executor.shutdown(wait=True, cancel_futures=True)


def forks() -> bool:
    """Whether ``Pool`` works here (Linux: ``fork`` without the macOS caveats)."""
    return hasattr(os, "fork") and sys.platform == "linux"


class Pool:
    """Forked workers that exist before their work does, for one ``map``.

    Forking first lets each worker run ``warm`` (imports, compiled tables) while the parent
    is still finding out what the items are (``inspect`` resolving its paths): the start-up
    of both runs on both cores at once. The items and ``fn`` then reach each worker once,
    pickled on a pipe of its own; after that only indices cross the shared task pipe.
    """

    def __init__(self, n: int, warm: Callable[[], object] | None = None) -> None:
        self.n = n
        self.task_r, self.task_w = os.pipe()
        os.set_blocking(self.task_w, False)  # the parent never waits on a full task pipe
        self.jobs: dict[int, int] = {}  # result pipe's read end -> the worker's job pipe
        self.pids: dict[int, int] = {}  # result pipe's read end -> worker pid
        self.finished = False
        try:
            for _ in range(n):
                self._fork(warm)
        except BaseException:
            self.close()
            raise
        os.close(self.task_r)
        self.task_r = -1

    def _fork(self, warm: Callable[[], object] | None) -> None:
        job_r, job_w = os.pipe()
        res_r, res_w = os.pipe()
        _widen(res_w)
        sys.stdout.flush()  # nothing buffered here is written twice
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the worker: never returns into the caller's code
            code = 1
            try:
                signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C ends it, silently
                os.close(self.task_w)
                os.close(job_w)
                os.close(res_r)
                for fd in (*self.jobs, *self.jobs.values()):  # the other workers' pipes
                    os.close(fd)
                if warm is not None:
                    with contextlib.suppress(Exception):  # warming is an optimisation
                        warm()
                _work(job_r, self.task_r, res_w)
                code = 0
            finally:
                os._exit(code)
        os.close(job_r)
        os.close(res_w)
        self.jobs[res_r] = job_w
        self.pids[res_r] = pid

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def map(self, fn: Callable[[T], R], items: Sequence[T],
            first: Sequence[int] | None = None) -> Generator[R, None, None]:
        """``map(fn, items)`` in input order; ``fn`` and ``items`` must pickle (the workers
        were forked before they existed). One ``map`` per pool.

        ``first``: the order in which the workers take the items (every index once), e.g.
        the biggest first, so that no worker is left with a big one at the end while the
        others idle; the results still come in input order."""
        if len(items) >= END:
            raise ValueError(f"{len(items)} items: more than a task index can name")
        order = range(len(items)) if first is None else first
        if sorted(order) != list(range(len(items))):
            raise ValueError("first must hold every index of items once")
        import selectors  # the parent's alone: not imported before the workers fork

        job = pickle.dumps((fn, items), pickle.HIGHEST_PROTOCOL)
        for fd, job_w in list(self.jobs.items()):
            try:
                _write_all(job_w, _SIZE.pack(len(job)) + job)
            except BrokenPipeError:  # it died before its work came (warming, the OOM killer)
                raise WorkerDied(self._reap(fd) or "a worker ended before its work came") from None
        pending = b"".join(_TASK.pack(i) for i in order) + _TASK.pack(END) * self.n
        sel = selectors.DefaultSelector()
        for fd in self.pids:
            sel.register(fd, selectors.EVENT_READ)
        done: dict[int, tuple[bool, Any]] = {}
        nxt = 0
        try:
            pending = _feed(self.task_w, pending)
            if pending:
                sel.register(self.task_w, selectors.EVENT_WRITE)
            while nxt < len(items):
                for key, _ in sel.select():
                    fd = int(key.fd)
                    if fd == self.task_w:
                        pending = _feed(self.task_w, pending)
                        if not pending:
                            sel.unregister(self.task_w)
                        continue
                    got = _receive(fd)
                    if got is None:  # the pipe closed: the worker took END, or died
                        sel.unregister(fd)
                        death = self._reap(fd)
                        if death is not None:
                            raise WorkerDied(death)
                        if not self.pids and nxt + len(done) < len(items):
                            raise WorkerDied("every worker exited with results missing")
                        continue
                    index, failed, value = got
                    done[index] = (failed, value)
                while nxt in done:
                    failed, value = done.pop(nxt)
                    nxt += 1
                    if failed:
                        raise value
                    yield value
            self.finished = True
        finally:
            sel.close()

    def _reap(self, fd: int) -> str | None:
        os.close(fd)
        os.close(self.jobs.pop(fd))
        return _death(self.pids.pop(fd))

    def close(self) -> None:
        """End the workers: those that finished their work exit by themselves (or, never
        given work, at the end of their job pipe); any other is killed (an error, Ctrl-C, a
        consumer that stopped early), and every one is waited for."""
        if self.task_r >= 0:
            os.close(self.task_r)
            self.task_r = -1
        if self.task_w >= 0:
            os.close(self.task_w)
            self.task_w = -1
        for fd in list(self.pids):
            os.close(self.jobs[fd])  # a worker still waiting for its job sees the end
        for fd, pid in self.pids.items():
            if not self.finished:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
            os.close(fd)
        self.pids.clear()
        self.jobs.clear()


def _work(job_r: int, task_r: int, res_w: int) -> None:
    """A worker's loop: read the job, then take an index, send back the pickled result."""
    head = _read_exact(job_r, _SIZE.size)
    if head is None:
        return  # the pool closed before giving work
    raw_job = _read_exact(job_r, _SIZE.unpack(head)[0])
    if raw_job is None:
        return
    fn, items = pickle.loads(raw_job)  # our own parent wrote it
    while True:
        raw = _read_exact(task_r, _TASK.size)
        if raw is None:
            return
        (index,) = _TASK.unpack(raw)
        if index == END:
            return
        try:
            payload, failed = pickle.dumps(fn(items[index]), pickle.HIGHEST_PROTOCOL), False
        except Exception as exc:  # the parent raises it, as a serial map would
            try:
                payload = pickle.dumps(exc, pickle.HIGHEST_PROTOCOL)
            except Exception:  # an exception that cannot be pickled: its text
                payload = pickle.dumps(RuntimeError(f"{type(exc).__name__}: {exc}"))
            failed = True
        _write_all(res_w, _RESULT.pack(index, len(payload), failed) + payload)


def _widen(fd: int) -> None:
    """A result pipe of 1 MiB instead of 64 KiB where Linux allows: a worker's result (up to
    ``SPILL_AT`` of text) then crosses in one write, not in sixteen turns of both processes."""
    try:
        import fcntl

        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, 1 << 20)
    except (ImportError, AttributeError, OSError):  # not Linux, or over the user's pipe limit
        pass


def _feed(fd: int, pending: bytes) -> bytes:
    """Write what the task pipe takes now; the rest waits for it to drain."""
    try:
        sent = os.write(fd, pending)
    except BlockingIOError:
        return pending
    return pending[sent:]


def _receive(fd: int) -> tuple[int, bool, Any] | None:
    head = _read_exact(fd, _RESULT.size)
    if head is None:
        return None
    index, size, failed = _RESULT.unpack(head)
    payload = _read_exact(fd, size) if size else b""
    if payload is None:
        return None
    return index, failed, pickle.loads(payload)  # our own forked worker wrote it


def _read_exact(fd: int, size: int) -> bytes | None:
    """``size`` bytes from a pipe, or None at its end (the writer closed or died)."""
    parts, left = [], size
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None
        parts.append(chunk)
        left -= len(chunk)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _death(pid: int) -> str | None:
    """How a worker ended, for the error; None for a clean exit (it took END: the results of
    every index it took are sent, since END follows them all in the task pipe)."""
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        return f"worker {pid} ended before sending its result"
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        return f"worker {pid} was killed by {signal.Signals(sig).name} before sending its result"
    code = os.waitstatus_to_exitcode(status)
    return None if code == 0 else f"worker {pid} exited {code} before sending its result"
