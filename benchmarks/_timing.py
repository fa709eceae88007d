"""Timing helpers the benchmarks share (imported as ``_timing``: each benchmark runs as a
script, so its own folder is first on ``sys.path``)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def timings(fn: Callable[[], object], repeat: int) -> list[float]:
    """Wall-clock seconds of ``repeat`` back-to-back calls of ``fn``."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


def best(fn: Callable[[], object], repeat: int) -> float:
    """The fastest of ``repeat`` calls: the least disturbed by other load on a shared machine."""
    return min(timings(fn, repeat))


def median_time(fn: Callable[[], object], repeat: int) -> float:
    """The median of ``repeat`` calls."""
    return statistics.median(timings(fn, repeat))
