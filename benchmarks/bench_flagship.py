"""The flagship's from-source builds as whole commands: prebake against the same build by hand.

Times, each as a whole process on ``examples/flagship`` (after ``scripts/long-leg`` or one
``prebake build --unit onnxruntime/P`` has run, so the environment, the sources and the compiler
cache exist; P is ``wasm`` by default, or ``linux-aarch64``):

- ``prebake build --unit onnxruntime/P --force``: sources, onnxruntime's build.py, guards (every
  member's contract, the whole-archive link), packaging and publishing;
- by hand: the very ``build.py`` command line that run logged (``$ cd … && python3 …``), in a
  fresh build folder with the same environment (``--cold``: less prebake's ``steady_cc``,
  ``by_hand_env``; warm, with it, whose compiles hit the cache entries prebake's made)
  and the sources' file times renewed (as a fresh unpack leaves them), as a
  release engineer's script would run it;
- prebake's own steps in its run (from its log's step times and the unit's timing record):
  before the recipe's first command (sources), and from the guards to the end (guards,
  version proof, packaging, publishing), as a share of the unit (target <= 5 % warm); inside
  them, the proofs that let a warm rebuild skip work, on their own line: each kept source
  tree compared with its archive (``prebake.sources.treeproof``, its log line's seconds) and
  the block-cache entries held to the cold path's bytes (``prebake.package.blocks``, seconds
  summed over the compressing threads);
- a second ``prebake build --unit onnxruntime/P``: skipped by input hash.

and prints the ratio prebake / by hand (target <= 1.05). By default the compiler cache is warm
for both (what CI sees on a re-run; it measures what prebake adds around the compiler);
``--cold`` builds without it for both (about 45 minutes each on 2 cores). zig (linux-aarch64) keeps
its own cache of compiles, warm for both unless its cache folders are emptied first.

``--runs N`` repeats the three and prints each run's figures with the machine's load (the
1-minute average when the run started and the highest seen during prebake's run; a run is
*quiet* when that stayed at or under ``QUIET``, what this build alone puts on 2 cores), then the
median and the spread (lowest to highest) of prebake's share.
Run: ``.venv/bin/python benchmarks/bench_flagship.py [--platform P] [--cold] [--runs 5]``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WS = ROOT / "examples" / "flagship"
PREBAKE = [sys.executable, "-m", "prebake", "-C", str(WS)]
QUIET = 3.0  # load average: this build's two cores and a little


def timed(argv: list[str], env: dict[str, str], cwd: Path = ROOT,
          output: Path | None = None) -> float:
    """Wall seconds of one whole command (its output kept in ``output`` when given)."""
    t0 = time.perf_counter()
    with open(output or os.devnull, "w") as out:
        proc = subprocess.run(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        tail = output.read_text()[-2000:] if output else ""
        raise SystemExit(f"{shlex.join(argv[:6])} … failed ({proc.returncode}):\n{tail}")
    return time.perf_counter() - t0


def build_py_phases(log: str) -> tuple[float, float] | None:
    """(configure, compile) seconds from build.py's own timestamped INFO lines."""
    stamps: dict[str, float] = {}
    for m in re.finditer(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) build \[INFO\] - "
                         r"(Generating CMake build tree|Building targets|Build complete)",
                         log, re.M):
        stamps.setdefault(m.group(2), time.mktime(time.strptime(m.group(1)[:19],
                                                                "%Y-%m-%d %H:%M:%S")))
    try:
        gen, tgt, done = (stamps[k] for k in ("Generating CMake build tree", "Building targets",
                                               "Build complete"))
    except KeyError:
        return None
    return tgt - gen, done - tgt


def logged_build_py(log: str, where: Path) -> tuple[str, str]:
    """The (folder, command line) of the build.py step in a unit's log."""
    for line in log.splitlines():
        m = re.match(r"\$ cd (\S+) && (.*tools/ci_build/build\.py .*)", line)
        if m:
            return m.group(1), m.group(2)
    raise SystemExit(f"{where}: no build.py command (run `prebake build` for it first)")


def logged_env(log: str) -> dict[str, str]:
    env = {}
    block = log.split("# environment (allowlist + platform + recipe):", 1)[1]
    for line in block.splitlines()[1:]:
        m = re.match(r"#   ([A-Za-z_][A-Za-z0-9_]*)=(.*)", line)
        if not m:
            break
        env[m.group(1)] = m.group(2)
    return env


def by_hand_env(env: dict[str, str]) -> dict[str, str]:
    """The logged environment as a release engineer's script has it: without prebake's
    steady_cc (its cost per compile counts against prebake, not for both), the compiler cache
    (if the run had one) as Emscripten's own wrapper."""
    out = dict(env)
    launcher = out.pop("PREBAKE_STEADY_LAUNCHER", "")
    if out.pop("PREBAKE_STEADY_ROOT", None) is not None:
        out.pop("EM_COMPILER_WRAPPER", None)
        if launcher:
            out["EM_COMPILER_WRAPPER"] = launcher
    return out


def step_times(log: str) -> dict[str, float]:
    """``## [ 301.8s] onnxruntime: guards …`` lines: when each step started."""
    out: dict[str, float] = {}
    for m in re.finditer(r"^## \[\s*([\d.]+)s\] (.*)$", log, re.M):
        out.setdefault(m.group(2), float(m.group(1)))
    return out


PROOF_LINE = re.compile(r"^# [^:\n]+: (?:kept from the earlier build: proven against its "
                        r"archive in ([\d.]+) s|unpacked again: .*\(proof ([\d.]+) s\)$)", re.M)
BLOCK_PROOFS = re.compile(r"^# packaging: .* proven in ([\d.]+) s", re.M)


def proof_times(log: str) -> tuple[float, int, float]:
    """(seconds, trees) of the source-tree proofs and the seconds of the block-cache proofs
    a unit's log records."""
    trees = [float(m.group(1) or m.group(2)) for m in PROOF_LINE.finditer(log)]
    blocks = sum(float(m) for m in BLOCK_PROOFS.findall(log))
    return sum(trees), len(trees), blocks


@dataclass(frozen=True)
class Run:
    through: float  # prebake build --force, the whole command
    by_hand: float
    skip: float
    sources: float | None  # before the recipe's first command
    after: float | None  # from the guards to the unit's end
    unit: float  # the unit, from its timing record (or the command)
    load_start: float
    load_max: float
    tree_proofs: float = 0.0  # inside ``sources``: the kept trees compared with their archives
    block_proofs: float = 0.0  # inside ``after``: cache entries held to the cold bytes

    @property
    def own(self) -> float | None:
        return None if self.sources is None or self.after is None else self.sources + self.after

    @property
    def share(self) -> float | None:
        return None if self.own is None else self.own / self.unit

    @property
    def quiet(self) -> bool:
        return self.load_max <= QUIET


class LoadWatch:
    """The highest 1-minute load average seen while it runs (sampled every 5 s)."""

    def __init__(self) -> None:
        self.start = os.getloadavg()[0]
        self.high = self.start
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.wait(5.0):
            self.high = max(self.high, os.getloadavg()[0])

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def one_run(plat: str, env: dict[str, str], cold: bool) -> Run:
    logfile = WS / ".prebake" / "logs" / f"onnxruntime--{plat}.log"
    timing = logfile.with_name(f"onnxruntime--{plat}.timing.json")
    timing.unlink(missing_ok=True)  # this run's, not an earlier one's
    watch = LoadWatch()
    through = timed([*PREBAKE, "build", "--unit", f"onnxruntime/{plat}", "--force"], env)
    watch.stop()
    log = logfile.read_text()
    # what the run set up before the recipe's first command: its environment and CMake
    # toolchain file, where a launcher would show
    if cold and "ccache" in log.split(": [1/", 1)[0]:
        raise SystemExit(f"{logfile}: the cold run named ccache before its first command; "
                         "not a cold build")
    steps = step_times(log)
    guards = next((t for s, t in steps.items() if ": guards" in s), None)
    unit = (json.loads(timing.read_text())["seconds"] if timing.is_file()
            else max(steps.values()) if steps else through)
    cwd, line = logged_build_py(log, logfile)
    # cold: what a release engineer runs; warm: the logged environment, steady_cc included, so
    # that the by-hand compiles find prebake's cache entries (its keys name the steady path)
    hand_env = by_hand_env(logged_env(log)) if cold else logged_env(log)
    argv = shlex.split(line)
    # the same build folder, emptied: the compiler cache keys on the compile lines, which name
    # it (include paths of generated headers), so another folder would miss where prebake hits
    build_dir = Path(argv[argv.index("--build_dir") + 1])
    shutil.rmtree(build_dir, ignore_errors=True)
    build_dir.mkdir(parents=True)
    if plat != "wasm":
        # prebake's run unpacked the sources afresh (or kept a tree whose files zig had
        # seen); in the same tree the by-hand run would find their file stats unchanged, which
        # zig's cache trusts without re-hashing the inputs (linux-aarch64: compile 236 s
        # against 315 s, docs/flagship.md). Touched, the sources are to it as a fresh unpack
        # leaves them. (The next prebake run then unpacks them again: they changed.) The wasm
        # leg's ccache hashes the files' bytes, and its sources stay as prebake left them.
        now = time.time()
        for f in Path(argv[1]).resolve().parents[2].rglob("*"):
            if f.is_file() and not f.is_symlink():
                os.utime(f, (now, now))
    hand_log = logfile.with_name(f"bench-by-hand-{plat}.log")
    by_hand = timed(argv, hand_env, cwd=Path(cwd), output=hand_log)
    skip = timed([*PREBAKE, "build", "--unit", f"onnxruntime/{plat}"], env)
    first = next((t for s, t in steps.items() if re.search(r": \[1/\d+\] ", s)), None)
    tree_s, trees, block_s = proof_times(log)
    run = Run(through, by_hand, skip, first, None if guards is None else unit - guards, unit,
              watch.start, watch.high, tree_s, block_s)
    print(f"{f'prebake build --unit onnxruntime/{plat} --force':40s}{through:8.1f} s")
    print(f"the same build.py by hand               {by_hand:8.1f} s")
    print(f"ratio prebake / by hand                 {through / by_hand:8.2f}x (target <= 1.05)")
    if run.own is not None:
        print(f"sources (before the recipe's commands)  {run.sources:8.1f} s")
        print(f"guards + packaging + publish            {run.after:8.1f} s")
        print(f"prebake's own steps                     {run.own:8.1f} s "
              f"({run.share:.1%} of the unit's {unit:.0f} s; target <= 5 %)")
    print(f"  of which proofs: source trees          {tree_s:8.2f} s ({trees} trees), "
          f"block-cache entries {block_s:.2f} s (summed over threads)")
    print(f"second run (skip by input hash)         {skip:8.2f} s (target < 1 s)")
    # where the time goes inside build.py, for both runs (configure = CMake, compile = make)
    for who, text in (("prebake", log), ("by hand", hand_log.read_text())):
        phases = build_py_phases(text)
        if phases is not None:
            print(f"build.py {who:8s} configure {phases[0]:6.0f} s, compile {phases[1]:6.0f} s")
    for what in ("kept from the earlier build", "unpacked again", "# packaging: "):
        for found in (ln for ln in log.splitlines() if what in ln):
            print(f"  log: {found[:150]}")
    print(f"load: {run.load_start:.1f} at the start, {run.load_max:.1f} at most during "
          f"prebake's run ({'quiet' if run.quiet else 'not quiet'})", flush=True)
    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cold", action="store_true", help="compiler cache off for both runs")
    ap.add_argument("--platform", default="wasm", choices=("wasm", "linux-aarch64"))
    ap.add_argument("--runs", type=int, default=1, help="runs, one after the other")
    args = ap.parse_args()
    plat = args.platform
    env = dict(os.environ)
    # the host tools the recipe pins (PyPI's CMake for linux-aarch64) are installed beside
    # this interpreter, as scripts/long-leg puts them on PATH
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    # cold: no launcher at all. CCACHE_DISABLE alone is not enough: the build's environment is
    # an allowlist that does not pass it, so prebake's run would hit the cache while the
    # by-hand one missed (a ratio of 0.1x that says nothing)
    env.pop("PREBAKE_COMPILER_LAUNCHER", None)
    if not args.cold:
        env["PREBAKE_COMPILER_LAUNCHER"] = "ccache"
    # the environment as `toolchain install` leaves it, for both runs alike: with Emscripten's
    # system libraries for the platform's flags built. Left to the first run, it built 17 of
    # them (~100 s) and the by-hand run found them: 1.20x cold, against 0.97x with both alike.
    timed([*PREBAKE, "toolchain", "install", "--platform", plat], env)
    print(f"compiler cache {'cold' if args.cold else 'warm'}, {args.runs} run(s)", flush=True)
    runs = []
    for i in range(1, args.runs + 1):
        print(f"--- run {i}", flush=True)
        runs.append(one_run(plat, env, args.cold))
    if len(runs) > 1:
        summary(runs)


def summary(runs: list[Run]) -> None:
    print("--- summary")
    print("run  prebake  by hand  sources  after  own    share   proofs  load start/max")
    for i, r in enumerate(runs, 1):
        own = f"{r.own:5.1f}" if r.own is not None else "  -  "
        share = f"{r.share:6.1%}" if r.share is not None else "   -  "
        print(f"{i:3d}  {r.through:7.1f}  {r.by_hand:7.1f}  {r.sources or 0:7.1f}  "
              f"{r.after or 0:5.1f}  {own}  {share}  {r.tree_proofs + r.block_proofs:6.2f}  "
              f"{r.load_start:4.1f}/{r.load_max:4.1f}{'' if r.quiet else '  (not quiet)'}")
    for label, chosen in (("all runs", runs), ("quiet runs", [r for r in runs if r.quiet])):
        shares = [r.share for r in chosen if r.share is not None]
        if not shares:
            print(f"{label}: none")
            continue
        ratios = [r.through / r.by_hand for r in chosen]
        print(f"{label} ({len(shares)}): prebake's share median {statistics.median(shares):.1%}, "
              f"spread {min(shares):.1%}-{max(shares):.1%} (target <= 5 %); ratio median "
              f"{statistics.median(ratios):.2f}x, spread {min(ratios):.2f}-{max(ratios):.2f}x")


if __name__ == "__main__":
    main()
