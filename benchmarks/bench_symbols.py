"""``prebake inspect`` over Debian llvm-14-dev's static libraries vs ``llvm-nm``, as commands.

What a user runs, as whole processes, side by side in one run: ``llvm-nm-14`` and
``llvm-nm-14 -C`` against ``prebake inspect --json`` (facts), ``prebake inspect`` (the table),
``prebake inspect --symbols`` and ``prebake inspect --symbols --json``, over every
``/usr/lib/llvm-14/lib/libLLVM*.a`` (176 archives, 244 MB). Each command writes to a file (the
same folder for all), the rounds alternate the commands so that each sees the same load, and
the median of the rounds counts. Per command: wall time, CPU seconds (user + sys of the whole
process tree, which moves less than wall time on a shared machine), peak RSS (the largest
process of the tree, from ``wait4``) and output size. Then each ratio against its bar:
``--symbols`` <= 1.2x ``llvm-nm -C``; ``--symbols --json`` <= 1.6x ``llvm-nm -C`` with peak
RSS <= 2x; the table <= 1.2x ``--json``; ``--json`` <= 0.5x ``llvm-nm``. Then the library
level (in-process ``inspect()`` calls on one core, no output) with the C loops and with their
plain Python reference in ``hotloops.scan`` (bar: the reference within 4x), and start-up:
the median of ``prebake --version`` (bar: under 150 ms).

Run: .venv/bin/python benchmarks/bench_symbols.py [--rounds 3] [GLOB]
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _timing import run_command

DEFAULT_GLOB = "/usr/lib/llvm-14/lib/libLLVM*.a"
PREBAKE = [sys.executable, "-m", "prebake", "inspect"]


def commands(nm: str) -> dict[str, list[str]]:
    return {
        "llvm-nm": [nm],
        "llvm-nm -C": [nm, "-C"],
        "prebake inspect --json": [*PREBAKE, "--json"],
        "prebake inspect": PREBAKE,
        "prebake inspect --symbols": [*PREBAKE, "--symbols"],
        "prebake inspect --symbols --json": [*PREBAKE, "--symbols", "--json"],
    }


BARS = (  # (label, numerator, denominator, what, bar)
    ("--symbols / llvm-nm -C", "prebake inspect --symbols", "llvm-nm -C", "wall", 1.2),
    ("--symbols --json / llvm-nm -C", "prebake inspect --symbols --json", "llvm-nm -C", "wall",
     1.6),
    ("--symbols --json RSS / llvm-nm -C RSS", "prebake inspect --symbols --json", "llvm-nm -C",
     "rss", 2.0),
    ("table / --json", "prebake inspect", "prebake inspect --json", "wall", 1.2),
    ("--json (facts) / llvm-nm", "prebake inspect --json", "llvm-nm", "wall", 0.5),
)


def run_once(argv: list[str], out: Path) -> dict[str, float]:
    """One whole process: wall seconds, CPU seconds of its tree, its own peak RSS (MB), output
    bytes (``_timing.run_command``: a fresh launcher forks it, so the peak is the command's)."""
    got = run_command(argv, str(out))
    if got["code"] not in (0, 1):  # llvm-nm exits 1 for members without symbols
        raise SystemExit(f"{' '.join(argv[:6])}… exited {got['code']}")
    return got


def library_seconds(paths: list[str], python_loops: bool) -> tuple[float, float]:
    """In-process ``inspect()`` of every archive, with and without symbols (no output), with
    the C loops or (``python_loops``) their Python reference in ``hotloops.scan``."""
    from prebake.inspect import ParseOptions, elf, hotloops, hotloops_py, inspect

    saved = hotloops.scan
    hotloops.scan = hotloops_py if python_loops else saved
    elf._probe.cache_clear()
    try:
        res = []
        for symbols in (True, False):
            t0 = time.perf_counter()
            for p in paths:
                inspect(p, ParseOptions(symbols=symbols))
            res.append(time.perf_counter() - t0)
    finally:
        hotloops.scan = saved
    return res[0], res[1]


def startup_seconds(runs: int = 21) -> float:
    """The median wall time of ``prebake --version``, as a user starts it."""
    exe = Path(sys.executable).with_name("prebake")
    argv = [str(exe) if exe.exists() else sys.executable, *([] if exe.exists() else
                                                           ["-m", "prebake"]), "--version"]
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def symbol_lines(path: Path) -> int:
    with open(f"{path}.stdout", "rb") as fh:
        return sum(1 for line in fh if line.startswith((b"  T ", b"  W ", b"  U ")))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pattern", nargs="?", default=DEFAULT_GLOB)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    nm = shutil.which("llvm-nm-14") or shutil.which("llvm-nm")
    paths = sorted(glob.glob(args.pattern))  # noqa: PTH207 (an absolute pattern)
    if not paths or nm is None:
        print(f"needs llvm-nm and archives matching {args.pattern} (llvm-14-dev)",
              file=sys.stderr)
        return 2
    total = sum(Path(p).stat().st_size for p in paths)
    for p in paths:  # warm the page cache for every side
        Path(p).read_bytes()
    # what an installed prebake has (pip compiles at install): current bytecode, even where
    # PYTHONDONTWRITEBYTECODE (common in containers) keeps a run from writing its own
    import compileall

    import prebake
    compileall.compile_dir(Path(prebake.__file__).parent, quiet=1)
    cmds = commands(nm)
    print(f"{len(paths)} archives, {total / 1e6:.0f} MB, {os.cpu_count()} cores, "
          f"median of {args.rounds} alternating rounds, load {os.getloadavg()[0]:.1f}")
    runs: dict[str, list[dict[str, float]]] = {k: [] for k in cmds}
    # outputs in memory where there is a tmpfs: a disk's write-back of one command's 165 MB
    # must not land in the next command's time
    shm = "/dev/shm" if Path("/dev/shm").is_dir() and os.access("/dev/shm", os.W_OK) else None
    with tempfile.TemporaryDirectory(prefix="bench-symbols-", dir=shm) as tmp:
        for _ in range(args.rounds):
            for label, argv in cmds.items():
                runs[label].append(run_once([*argv, *paths], Path(tmp) / "out"))
        run_once([*cmds["prebake inspect --symbols"], *paths], Path(tmp) / "sym")
        ours = symbol_lines(Path(tmp) / "sym")
        nm_g = subprocess.run([nm, "-g", *paths], capture_output=True, text=True).stdout
        theirs = sum(1 for ln in nm_g.splitlines() if ln and not ln.endswith(":"))
    med = {k: {m: statistics.median(r[m] for r in v) for m in v[0]} for k, v in runs.items()}
    print(f"{'command':34} {'wall s':>7} {'cpu s':>7} {'peak RSS':>9} {'output':>9}")
    for label, m in med.items():
        print(f"{label:34} {m['wall']:7.2f} {m['cpu']:7.2f} {m['rss']:6.0f} MB "
              f"{m['out'] / 1e6:6.1f} MB")
    ok = True
    for label, num, den, what, bar in BARS:
        ratio = med[num][what] / med[den][what]
        cpu = med[num]["cpu"] / med[den]["cpu"]
        ok &= ratio <= bar
        extra = f"  (cpu {cpu:.2f})" if what == "wall" else ""
        print(f"ratio {label:38} = {ratio:5.2f}  bar <= {bar}"
              f"  {'ok' if ratio <= bar else 'OVER'}{extra}")
    print(f"symbol lines: prebake {ours}, llvm-nm -g {theirs} "
          f"({'match' if ours == theirs else 'DIFFER'})")
    with_sym, facts = library_seconds(paths, python_loops=False)
    py_sym, py_facts = library_seconds(paths, python_loops=True)
    print(f"library (in-process inspect(), one core, no output): C loops: symbols "
          f"{with_sym:.2f} s, facts {facts:.2f} s; Python loops: symbols {py_sym:.2f} s, "
          f"facts {py_facts:.2f} s")
    for label, ratio in (("Python / C loops, symbols", py_sym / with_sym),
                         ("Python / C loops, facts", py_facts / facts)):
        ok &= ratio <= 4.0
        print(f"ratio {label:38} = {ratio:5.2f}  bar <= 4.0  {'ok' if ratio <= 4.0 else 'OVER'}")
    start = startup_seconds()
    ok &= start < 0.150
    print(f"start-up: prebake --version {start * 1000:.0f} ms  bar < 150 ms  "
          f"{'ok' if start < 0.150 else 'OVER'}")
    return 0 if ours == theirs else 1


if __name__ == "__main__":
    sys.exit(main())
