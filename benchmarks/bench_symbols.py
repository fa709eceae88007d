"""Symbol listing and facts summary of Debian llvm-14-dev's static libraries vs ``llvm-nm``.

The bar: listing every defined and undefined symbol of every member of
``/usr/lib/llvm-14/lib/libLLVM*.a`` takes at most 1.5× ``llvm-nm`` on the same archives, and
the facts summary without ``--symbols`` is several times faster again. Both run side by side
in this one process tree, warm page cache, best of N. prebake uses a process pool over the
archives (one worker per core); each worker writes the names out, like llvm-nm does.

Run: .venv/bin/python benchmarks/bench_symbols.py [--repeat 3] [GLOB]
"""

from __future__ import annotations

import argparse
import glob
import multiprocessing as mp
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from prebake.inspect import ParseOptions, elf, glibc, inspect, readers
from prebake.inspect.archive import read_index

DEFAULT_GLOB = "/usr/lib/llvm-14/lib/libLLVM*.a"


def _list_symbols(path: str) -> int:
    facts = inspect(path, ParseOptions(symbols=True))
    n = 0
    with open(os.devnull, "w") as out:
        for m in facts.members or []:
            if m.symbols is not None:
                out.write("\n".join(m.symbols.defined))
                out.write("\n".join(m.symbols.undefined))
                n += len(m.symbols.defined) + len(m.symbols.undefined)
    return n


def _summary(path: str) -> int:
    facts = inspect(path, ParseOptions(symbols=False))
    return len(facts.members or [])


def _index_only(path: str) -> int:
    return len(read_index(path))


def _pooled(fn: Callable[[str], int], paths: list[str], workers: int) -> int:
    with mp.get_context("fork").Pool(workers) as pool:
        return sum(pool.map(fn, paths, chunksize=1))


def _cpu() -> float:
    """CPU seconds of this process and its reaped children (llvm-nm, pool workers)."""
    me, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


CPU: dict[str, float] = {}
RESULT: dict[str, object] = {}


def _interleaved(repeat: int, runs: dict[str, Callable[[], object]]) -> dict[str, float]:
    """Best wall time per label; the runs alternate so that every side sees the same load.

    The best CPU time per label goes to ``CPU``: the machine may be shared, and wall ratios
    move with other load, CPU ratios much less.
    """
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(repeat):
        for label, fn in runs.items():
            t0, c0 = time.perf_counter(), _cpu()
            RESULT[label] = fn()
            best[label] = min(best[label], time.perf_counter() - t0)
            CPU[label] = min(CPU.get(label, float("inf")), _cpu() - c0)
    return best


def _llvm_nm_count(paths: list[str]) -> int:
    out = subprocess.run(["llvm-nm", "-g", *paths], capture_output=True, text=True).stdout
    return sum(1 for line in out.splitlines() if line and not line.endswith(":"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pattern", nargs="?", default=DEFAULT_GLOB)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()
    # biggest first, so the pool does not end on one large archive
    paths = sorted(glob.glob(args.pattern), key=lambda p: -Path(p).stat().st_size)  # noqa: PTH207 (an absolute pattern)
    if not paths:
        print(f"no archives match {args.pattern} (install llvm-14-dev)", file=sys.stderr)
        return 2
    total = sum(Path(p).stat().st_size for p in paths)
    for p in paths:  # warm the page cache for both sides
        Path(p).read_bytes()
    # import every format reader, load the glibc table and compile the ELF summary's name probe
    # once, before the pool forks (as interpreter start-up, this is outside the timing;
    # llvm-nm's own start-up is inside it)
    readers()
    glibc.table("x86_64")
    elf.warm("x86_64")
    print(f"{len(paths)} archives, {total / 1e6:.0f} MB, {args.workers} workers")

    def nm() -> object:
        return subprocess.run(
            ["llvm-nm", *paths], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
        )

    best = _interleaved(
        args.repeat,
        {
            "nm": nm,
            "sym": lambda: _pooled(_list_symbols, paths, args.workers),
            "sum": lambda: _pooled(_summary, paths, args.workers),
            "idx": lambda: sum(_index_only(p) for p in paths),
        },
    )
    t_nm, t_sym, t_sum, t_idx = best["nm"], best["sym"], best["sum"], best["idx"]
    n_sym = RESULT["sym"]
    n_nm = _llvm_nm_count(paths)
    print(f"llvm-nm (all symbols)            {t_nm:7.3f} s")
    print(
        f"prebake --symbols (def+undef)    {t_sym:7.3f} s  {n_sym} symbols "
        f"({'matches' if n_sym == n_nm else f'llvm-nm -g lists {n_nm}'})"
    )
    print(f"prebake summary (no --symbols)   {t_sum:7.3f} s")
    print(f"archive index only (read_index)  {t_idx:7.3f} s  (defined symbols, one process)")
    print(f"ratio symbols / llvm-nm  = {t_sym / t_nm:.2f}  (bar: <= 1.5)")
    print(f"ratio summary / llvm-nm  = {t_sum / t_nm:.2f}")
    print(f"summary speed-up vs --symbols = {t_sym / t_sum:.1f}x")
    c_nm, c_sym, c_sum = CPU["nm"], CPU["sym"], CPU["sum"]
    print(
        f"CPU seconds: llvm-nm {c_nm:.3f}, --symbols {c_sym:.3f}, summary {c_sum:.3f} "
        f"(ratios {c_sym / c_nm:.2f} / {c_sum / c_nm:.2f})"
    )
    return 0 if n_sym == n_nm else 1


if __name__ == "__main__":
    sys.exit(main())
