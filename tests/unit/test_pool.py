"""The forked ordered pool: input order, errors and dead workers surface, no worker is left."""

from __future__ import annotations

import functools
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from prebake.commands._pool import Pool, WorkerDied, ordered_map

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the forked pool is Linux's")


def _children() -> list[int]:
    pid = os.getpid()
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(x) for x in text.split()]


def _slow_square(x: int) -> tuple[int, int]:
    if x % 97 == 0:
        time.sleep(0.001 * (x % 5))  # later items overtake earlier ones
    return x * x, os.getpid()


def test_results_come_in_input_order_from_every_worker() -> None:
    # 20 000 indices are 80 000 bytes: more than a pipe holds, so the feeding waits on it
    items = list(range(20_000))
    got = list(ordered_map(_slow_square, items, 2))
    assert [v for v, _ in got] == [x * x for x in items]
    pids = {p for _, p in got}
    assert len(pids) == 2 and os.getpid() not in pids
    assert _children() == []


def _fail_at_5(x: int) -> int:
    if x == 5:
        raise KeyError(f"item {x}")
    return x


def test_an_error_in_a_worker_is_raised_here_after_the_results_before_it() -> None:
    seen = []
    with pytest.raises(KeyError, match="item 5"):
        for v in ordered_map(_fail_at_5, list(range(50)), 2):
            seen.append(v)
    assert seen == [0, 1, 2, 3, 4]
    assert _children() == []


class _Unpicklable(Exception):
    def __reduce__(self) -> str | tuple[object, ...]:
        raise TypeError("no pickling")


def _raise_unpicklable(x: int) -> int:
    raise _Unpicklable(f"odd {x}")


def test_an_exception_that_cannot_be_pickled_arrives_as_its_text() -> None:
    with pytest.raises(RuntimeError, match="_Unpicklable: odd 0"):
        list(ordered_map(_raise_unpicklable, [0, 1, 2], 2))
    assert _children() == []


def _die_at_3(x: int) -> int:
    if x == 3:
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(0.01)
    return x


def test_a_killed_worker_is_an_error_not_a_hang() -> None:
    t0 = time.monotonic()
    with pytest.raises(WorkerDied, match="killed by SIGKILL"):
        list(ordered_map(_die_at_3, list(range(40)), 2))
    assert time.monotonic() - t0 < 30
    assert _children() == []


def test_stopping_early_ends_the_workers() -> None:
    it = ordered_map(_slow_square, list(range(5_000)), 2)
    assert next(it)[0] == 0
    it.close()
    assert _children() == []


def test_one_core_or_one_item_runs_here() -> None:
    assert [p for _, p in ordered_map(_slow_square, [1, 2, 3], 1)] == [os.getpid()] * 3
    assert [p for _, p in ordered_map(_slow_square, [4], 2)] == [os.getpid()]


_WARMED: list[int] = []


def _warm_up() -> None:
    _WARMED.append(os.getpid())


def _warmed(x: int) -> tuple[int, list[int], int]:
    return x, list(_WARMED), os.getppid()  # what the warm-up left, and who forked this worker


def test_a_pool_forked_before_its_items_warms_once_and_its_workers_inherit_it() -> None:
    with Pool(2, warm=_warm_up) as pool:
        items = list(range(300))  # made after the fork: they reach the workers pickled
        got = list(pool.map(_warmed, items))
        seed = pool.seed
    assert [x for x, _, _ in got] == items
    # one warm-up, in the seed that then forked both workers
    assert {(tuple(w), parent) for _, w, parent in got} == {((seed,), seed)}
    assert seed != os.getpid() and _WARMED == []  # the parent never warmed
    assert _children() == []


def test_the_seed_dying_before_the_work_is_an_error() -> None:
    with Pool(2, warm=functools.partial(time.sleep, 5)) as pool:  # killed while warming up
        os.kill(pool.seed, signal.SIGKILL)
        with pytest.raises(WorkerDied, match="first process"):
            list(pool.map(abs, [1, 2, 3]))
    assert _children() == []


def test_a_pool_closed_without_work_leaves_no_worker() -> None:
    with Pool(2, warm=_warm_up):
        pass
    assert _children() == []


def test_the_take_order_changes_who_computes_first_not_the_output_order() -> None:
    items = list(range(200))
    with Pool(2) as pool:
        got = list(pool.map(_slow_square, items, first=items[::-1]))
    assert [v for v, _ in got] == [x * x for x in items]
    with Pool(2) as pool, pytest.raises(ValueError, match="every index"):
        list(pool.map(_slow_square, items, first=[0, 0, 1]))
    assert _children() == []


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:  # ended meanwhile
                pass
    return found


def test_a_parent_that_dies_leaves_no_pool_process_behind() -> None:
    """Killed while the seed warms up: the workers it forks find no work and end, and the
    seed still reaps them before it ends itself."""
    marker = f"pool-orphan-test-{os.getpid()}"
    code = ("import functools, os, sys, time\n"
            "from prebake.commands._pool import Pool\n"
            "pool = Pool(2, warm=functools.partial(time.sleep, 0.3))\n"
            "os._exit(0)\n")
    import subprocess

    subprocess.run([sys.executable, "-c", code, marker], check=True, timeout=30)
    deadline = time.monotonic() + 10
    while _processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _processes_with(marker) == []


def test_a_pool_that_cannot_get_its_pipes_leaves_no_descriptor_open() -> None:
    import resource

    def open_fds() -> int:
        return len(list(Path("/proc/self/fd").iterdir()))

    before = open_fds()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    # room for a few pipes, not for the 2 + 4 x 4 + 2 descriptors of a pool of four
    resource.setrlimit(resource.RLIMIT_NOFILE, (before + 8, hard))
    try:
        with pytest.raises(OSError):
            Pool(4)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert open_fds() == before
    assert _children() == []
