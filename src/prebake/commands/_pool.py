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

import os
import struct
import sys

# nothing heavier at the top (not even typing or contextlib: those are imported where used):
# ``prebake.commands._early`` forks the seed first thing, and every import before it waits
TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
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

    Forking first lets the workers warm up (imports, compiled tables) while the parent is
    still finding out what the items are (``inspect`` resolving its paths). ``warm`` runs
    once, in a first forked process (the seed) that then forks the workers: each starts with
    everything warmed and none repeats it, and while the seed warms up the parent has the
    other core to itself (three processes warming and parsing on two cores slowed all
    three). The seed stays, idle, to wait for the workers and report how each ended.

    The items and ``fn`` reach each worker once, pickled on a pipe of its own; after that
    only indices cross the shared task pipe.
    """

    def __init__(self, n: int, warm: Callable[[], object] | None = None) -> None:
        self.n = n
        self.finished = False
        self.seed = -1
        self.workers: list[int] | None = None  # pids, in the order of the result pipes
        self.ends: dict[int, int] = {}  # pid -> wait status, as the seed reports them
        self.task_w = self.report = -1
        self.jobs: dict[int, tuple[int, int]] = {}
        made: list[int] = []  # every descriptor made here, closed again if the fork fails
        try:
            task_r, self.task_w = _pipe(made)
            os.set_blocking(self.task_w, False)  # the parent never waits on a full task pipe
            jobs = [_pipe(made) for _ in range(n)]
            results = [_pipe(made) for _ in range(n)]
            self.report, report_w = _pipe(made)
            for _, w in results:
                _widen(w)
            sys.stdout.flush()  # nothing buffered here is written twice
            sys.stderr.flush()
            pid = os.fork()
        except BaseException:
            for fd in made:
                os.close(fd)
            raise
        # result pipe's read end -> its worker's number and job pipe (the parent's ends)
        self.jobs = {r: (i, job_w)
                     for i, ((_, job_w), (r, _)) in enumerate(zip(jobs, results, strict=True))}
        if pid == 0:  # the seed: never returns into the caller's code
            code = 1
            try:
                os.close(self.task_w)
                os.close(self.report)
                for r, (_, job_w) in self.jobs.items():
                    os.close(r)
                    os.close(job_w)
                _seed(warm, task_r, jobs, results, report_w)
                code = 0
            finally:
                os._exit(code)
        self.seed = pid
        for fd in (task_r, report_w, *(r for r, _ in jobs), *(w for _, w in results)):
            os.close(fd)

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
        import pickle

        job = pickle.dumps((fn, items), pickle.HIGHEST_PROTOCOL)
        for fd, (_, job_w) in list(self.jobs.items()):
            try:
                _write_all(job_w, _SIZE.pack(len(job)) + job)
            except BrokenPipeError:  # it died before its work came (warming, the OOM killer)
                raise WorkerDied(self._reap(fd) or "a worker ended before its work came") from None
        pending = _feed(self.task_w, b"".join(_TASK.pack(i) for i in order)
                        + _TASK.pack(END) * self.n)
        # the parent's alone, and only once the workers have their work
        import selectors

        sel = selectors.DefaultSelector()
        for fd in self.jobs:
            sel.register(fd, selectors.EVENT_READ)
        done: dict[int, tuple[bool, Any]] = {}
        nxt = 0
        try:
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
                        if not self.jobs and nxt + len(done) < len(items):
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

    def _pids(self) -> list[int]:
        """The workers' pids, which the seed sends once it has forked them (waits for that:
        the seed's warm-up at most); empty if it died before."""
        if self.workers is None:
            raw = _read_exact(self.report, 4 * self.n) if self.report >= 0 else None
            self.workers = list(struct.unpack(f"<{self.n}i", raw)) if raw is not None else []
        return self.workers

    def _reap(self, fd: int) -> str | None:
        """Close a worker's pipes once its result pipe ended, and say how it ended."""
        number, job_w = self.jobs.pop(fd)
        os.close(fd)
        os.close(job_w)
        pids = self._pids()
        if not pids:
            return _seed_death(self.seed)
        pid = pids[number]
        while pid not in self.ends:  # the seed reports each worker as it ends
            raw = _read_exact(self.report, _ENDED.size)
            if raw is None:
                return f"worker {pid} ended before sending its result"
            ended, status = _ENDED.unpack(raw)
            self.ends[ended] = status
        return _death(pid, self.ends[pid])

    def close(self) -> None:
        """End the workers: those that finished their work exit by themselves (or, never
        given work, at the end of their job pipe); any other is killed (an error, Ctrl-C, a
        consumer that stopped early). The seed waits for every one, and is waited for."""
        if self.task_w >= 0:
            os.close(self.task_w)
            self.task_w = -1
        for fd, (_, job_w) in self.jobs.items():
            os.close(job_w)  # a worker still waiting for its job sees the end
            os.close(fd)
        self.jobs.clear()
        if self.seed < 0:
            return
        import contextlib

        if not self.finished:
            import signal

            for pid in self._pids():
                with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
                    os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.seed, 0)
        self.seed = -1
        os.close(self.report)
        self.report = -1


_ENDED = struct.Struct("<ii")  # a worker's pid and wait status, from the seed


def _pipe(made: list[int]) -> tuple[int, int]:
    r, w = os.pipe()
    made += (r, w)
    return r, w


def _seed(warm: Callable[[], object] | None, task_r: int, jobs: list[tuple[int, int]],
          results: list[tuple[int, int]], report_w: int) -> None:
    """The seed: warm up, fork the workers, report their pids, then each one's end.

    ``pickle`` and ``signal`` are imported here, not before the fork: the parent and the seed
    each import what they need at once, on their own cores."""
    import contextlib
    import pickle  # noqa: F401 (loaded for the workers, which inherit it)
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C ends it, silently
    if warm is not None:
        with contextlib.suppress(Exception):  # warming is an optimisation
            warm()
    pids = []
    for i in range(len(jobs)):
        pid = os.fork()
        if pid == 0:  # a worker
            code = 1
            try:
                os.close(report_w)
                for j, ((job_r, _), (_, res_w)) in enumerate(zip(jobs, results, strict=True)):
                    if j != i:
                        os.close(job_r)
                        os.close(res_w)
                _work(jobs[i][0], task_r, results[i][1])
                code = 0
            finally:
                os._exit(code)
        pids.append(pid)
    # the workers' ends are theirs alone: a result pipe must end when its worker does
    for fd in (task_r, *(r for r, _ in jobs), *(w for _, w in results)):
        os.close(fd)
    _report(report_w, struct.pack(f"<{len(pids)}i", *pids))
    for _ in pids:  # reaped even when nobody reads the reports (the parent was killed)
        pid, status = os.waitpid(-1, 0)  # in the order they end
        _report(report_w, _ENDED.pack(pid, status))


def _report(fd: int, data: bytes) -> None:
    import contextlib

    with contextlib.suppress(BrokenPipeError):  # the parent is gone: nobody to tell
        _write_all(fd, data)


def _work(job_r: int, task_r: int, res_w: int) -> None:
    """A worker's loop: read the job, then take an index, send back the pickled result."""
    import pickle

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
    import pickle

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


def _death(pid: int, status: int) -> str | None:
    """How a worker ended, for the error; None for a clean exit (it took END: the results of
    every index it took are sent, since END follows them all in the task pipe)."""
    import signal

    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        return f"worker {pid} was killed by {signal.Signals(sig).name} before sending its result"
    code = os.waitstatus_to_exitcode(status)
    return None if code == 0 else f"worker {pid} exited {code} before sending its result"


def _seed_death(pid: int) -> str:
    """Why no worker came: the seed ended before forking them (a signal, the OOM killer)."""
    import signal

    try:
        _, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        status = 0
    if status and os.WIFSIGNALED(status):
        return f"the pool's first process was killed by {signal.Signals(os.WTERMSIG(status)).name}"
    return "the pool's first process ended before forking its workers"
