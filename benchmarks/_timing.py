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


# A small process that forks the command, waits for it and reports its rusage: a command
# forked straight from the benchmark would report the benchmark's own peak memory as its own
# (Linux keeps the pre-exec peak of a forked process in ru_maxrss), so each command is the
# child of this fresh, small launcher instead.
_LAUNCH = """\
import os, sys, time
out, argv = sys.argv[1], sys.argv[2:]
try:  # the last command's output goes before the clock starts (truncating 165 MB is slow)
    os.unlink(out + ".stdout")
except FileNotFoundError:
    pass
fd = os.open(out + ".stdout", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
t0 = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.dup2(fd, 1)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 2)
    try:
        os.execvp(argv[0], argv)
    finally:
        os._exit(127)
_, status, ru = os.wait4(pid, 0)
wall = time.perf_counter() - t0
with open(out, "w") as fh:
    fh.write(f"{os.waitstatus_to_exitcode(status)} {wall} {ru.ru_utime + ru.ru_stime} "
             f"{ru.ru_maxrss}")
"""


def run_command(argv: list[str], out: str) -> dict[str, float]:
    """One whole process, its stdout into ``out + ".stdout"``: wall seconds from its fork to
    its end, CPU seconds of its tree, its own peak RSS in MB, exit code and output bytes."""
    import subprocess
    import sys
    from pathlib import Path

    subprocess.run([sys.executable, "-S", "-c", _LAUNCH, out, *argv], check=True)
    with open(out) as fh:
        code, wall, cpu, rss = fh.read().split()
    return {"wall": float(wall), "cpu": float(cpu), "rss": int(rss) / 1024, "code": int(code),
            "out": Path(out + ".stdout").stat().st_size}
