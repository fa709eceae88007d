"""An ordered process pool for commands that read many independent files (``inspect``).

Parsing is pure Python, so threads would share one core; worker processes use every core the
process may run on. Results come back in input order, so output stays the same as a serial
run; results that finish before an earlier, slower one wait in the parent (callers keep them
small: ``inspect`` spills big outputs to files).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask, e.g. ``taskset``), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


def ordered_map(fn: Callable[[T], R], items: Sequence[T], workers: int | None = None,
                warm: Callable[[], object] | None = None) -> Iterator[R]:
    """``map(fn, items)`` over worker processes, in input order; in-process for one item or
    one core (no pool start-up for the common ``inspect lib.a``). ``warm`` runs here before
    the workers fork, so that lazy imports and tables are loaded once, not once per worker."""
    n = min(len(items), usable_cores() if workers is None else workers)
    if n <= 1:
        yield from map(fn, items)
        return
    if warm is not None:
        warm()
    import multiprocessing as mp  # 35 ms of imports: only when there is a pool
    from concurrent.futures import ProcessPoolExecutor

    # fork: workers inherit the imported readers and tables (spawn would import them again)
    ctx = mp.get_context("fork" if sys.platform == "linux" else "spawn")
    # a worker that dies (a signal, the OOM killer) raises BrokenProcessPool here instead of
    # leaving ``multiprocessing.Pool.imap`` waiting for its result forever
    pool = ProcessPoolExecutor(n, mp_context=ctx)
    try:
        yield from pool.map(fn, items)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
