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
import selectors
import signal
import struct
import sys
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

_TASK = struct.Struct("<I")  # an item's index; END asks a worker to exit
_RESULT = struct.Struct("<IQ?")  # index, pickle length, whether it is an exception
END = 0xFFFFFFFF


class WorkerDied(RuntimeError):
    """A worker process ended (a signal, the OOM killer) before sending a result."""


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask, e.g. ``taskset``), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


def ordered_map(fn: Callable[[T], R], items: Sequence[T], workers: int | None = None,
                warm: Callable[[], object] | None = None) -> Generator[R, None, None]:
    """``map(fn, items)`` over worker processes, in input order; in-process for one item or
    one core (no pool start-up for the common ``inspect lib.a``). ``warm`` runs here before
    the workers fork, so that lazy imports and tables are loaded once, not once per worker."""
    n = min(len(items), usable_cores() if workers is None else workers)
    if n <= 1:
        yield from map(fn, items)
        return
    if warm is not None:
        warm()
    if hasattr(os, "fork") and sys.platform == "linux":
        yield from _forked(fn, items, n)
        return
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(n, mp_context=mp.get_context("spawn"))
    try:
        yield from pool.map(fn, items)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _forked(fn: Callable[[T], R], items: Sequence[T], n: int) -> Iterator[R]:
    if len(items) >= END:
        raise ValueError(f"{len(items)} items: more than a task index can name")
    task_r, task_w = os.pipe()
    os.set_blocking(task_w, False)  # the parent never waits on a full task pipe
    pending = b"".join(_TASK.pack(i) for i in range(len(items))) + _TASK.pack(END) * n
    workers: dict[int, int] = {}  # result pipe's read end -> worker pid
    sel = selectors.DefaultSelector()
    try:
        for _ in range(n):
            res_r, res_w = os.pipe()
            sys.stdout.flush()  # nothing buffered here is written twice
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:  # the worker: never returns into the caller's code
                code = 1
                try:
                    os.close(task_w)
                    os.close(res_r)
                    for fd in workers:  # the other workers' pipes
                        os.close(fd)
                    _work(fn, items, task_r, res_w)
                    code = 0
                finally:
                    os._exit(code)
            os.close(res_w)
            workers[res_r] = pid
            sel.register(res_r, selectors.EVENT_READ)
        os.close(task_r)
        task_r = -1
        pending = _feed(task_w, pending)
        if pending:
            sel.register(task_w, selectors.EVENT_WRITE)
        done: dict[int, tuple[bool, Any]] = {}
        nxt = 0
        while nxt < len(items):
            for key, _ in sel.select():
                fd = int(key.fd)
                if fd == task_w:
                    pending = _feed(task_w, pending)
                    if not pending:
                        sel.unregister(task_w)
                    continue
                got = _receive(fd)
                if got is None:  # the pipe closed: the worker took END, or died
                    sel.unregister(fd)
                    os.close(fd)
                    death = _death(workers.pop(fd))
                    if death is not None:
                        raise WorkerDied(death)
                    if not workers and nxt + len(done) < len(items):
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
    finally:
        if task_r >= 0:
            os.close(task_r)
        os.close(task_w)
        for fd, pid in workers.items():
            with contextlib.suppress(ProcessLookupError):
                if nxt < len(items):  # stopped early (an error, Ctrl-C): do not wait for them
                    os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
            os.close(fd)
        sel.close()


def _work(fn: Callable[[T], R], items: Sequence[T], task_r: int, res_w: int) -> None:
    """A worker's loop: take an index, send back the pickled result or exception."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C ends a worker at once, silently
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
