"""FFmpeg's cold linux-x86_64 build as whole commands: prebake against the same configure and make
by hand (target <= 1.05x).

Times, each as a whole process, on ``examples/flagship`` (or ``--workspace DIR --unit NAME``):

- ``prebake -C WS build --unit ffmpeg/linux-x86_64 --force``: the source (verified, unpacked),
  the tools folder, zig's C runtime warm-up, FFmpeg's configure, ``make -jN``, ``make install…``,
  the guards (contract, link test, whole-archive proof), version proof, packaging, publishing;
- by hand: what a release engineer's script runs, one ``sh`` process: the recipe's commands as
  that run's log recorded them (``$ cd … && …``: configure, ``make -jN``, ``make install-libs
  install-headers``, the licence), in the same build folder and prefix emptied (FFmpeg builds
  out of tree there; configure links its ``src``), with the logged environment and its PATH
  (the tools folder prebake wrote first: ``x86_64-linux-gnu-cc`` is a one-line ``sh`` script that
  execs ``python -m ziglang cc -target x86_64-linux-gnu.2.28 -ffile-prefix-map=…``; nasm, nm,
  strip the host's). The scripts, not a hand-typed ``--cc='python -m ziglang cc -target …'``:
  the compile lines are then the same word for word, so the ratio counts prebake's steps and
  nothing else. A hand-typed line would build other objects (another configuration string in
  libavutil, the build's paths in the debug info) and save only one ``sh`` exec per compiler
  call: ~1 ms each measured here, ~3 s over the full build's 2 224 CC, X86ASM and LD lines and
  configure's probes, paid here by both sides alike;
- a second ``prebake build --unit …``: skipped by input hash;

and prints both wall times, the ratio prebake / by hand (target <= 1.05), each side's
configure / make / install times, and prebake's own steps: before the recipe's first command
(the source and zig's warm-up; the by-hand side starts from the unpacked tree, so all of it
counts against prebake) and from the guards to the unit's end, as a share of the unit.

Cold, for both sides alike:

- nothing of an earlier build: before prebake's run its unit's work folder (with the unpacked
  source prebake would keep) and its xz block cache (``.prebake/blocks/<unit>``) are deleted,
  so it unpacks and compresses; before the by-hand run its build folder and prefix are
  emptied (it runs in the source tree prebake's run unpacked, untimed); the file system is
  synced before each side's clock starts (a deletion's discards and the zig cache's copy
  otherwise land in the next timed run);
- no compiler launcher: ``PREBAKE_COMPILER_LAUNCHER`` is unset and the run's log must name no
  ccache before its first command (the flagship's linux-x86_64 has none anyway);
- zig's own cache: zig keeps in ``ZIG_GLOBAL_CACHE_DIR``/``ZIG_LOCAL_CACHE_DIR`` the C
  runtime its links need and the objects of configure's probes (156 ``test.o`` in the small
  configuration; make's own compiles leave none there). prebake passes both variables through
  its environment's allowlist and sets neither; unset, both are ``~/.cache/zig``, where an
  earlier build's probes would be hits for whichever side ran second. Each side gets its own
  fresh folder for both. By default that folder starts as a copy of a template holding only
  zig's C runtime for the target (``crt1``, glibc's stubs, libc++), built once per benchmark
  the way prebake's warm-up builds it (``prebake.toolchain.zigwarm``: a C program, a C shared
  library and a C++ shared library linked from ``/``): a per-machine cost paid once per zig
  release, like Emscripten's system libraries in bench_flagship, not part of either build.
  prebake's warm-up then finds it (under a second, counted as prebake's), by hand configure's first
  link finds it, and no FFmpeg object can hit. ``--zig-cache empty`` starts both from
  empty folders instead: prebake's warm-up then builds the C and C++ runtime (libc++ too,
  which FFmpeg's C never needs) and the by-hand run only what its links ask for — the cost
  of a machine's very first build, mostly zig's and partly prebake's choice.

``--runs N`` repeats both and prints each run's figures with the machine's load (the 1-minute
average when the run started and the highest seen during either side; *quiet* at or under
``QUIET``), then the median and spread of the ratio and of prebake's share.
Run: ``.venv/bin/python benchmarks/bench_ffmpeg.py [--runs 3]`` (about 10 minutes a side on
2 quiet cores; the source in prebake's download cache from any earlier build of the unit, or
the first timed run downloads it). A smoke check on a smaller configuration: ``--workspace
DIR --unit ffmpeg/linux-x86_64``, DIR a workspace whose recipe is the suite's small one
(tests/integration/test_ffmpeg.py) and whose linux-x86_64 platform is the flagship's (zig).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import sys
import time
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

from bench_flagship import QUIET, LoadWatch, logged_env, step_times, timed

from prebake.intake.loader import load_platforms
from prebake.toolchain.zigwarm import warm

ROOT = Path(__file__).resolve().parent.parent
WS = ROOT / "examples" / "flagship"
UNIT = "ffmpeg/linux-x86_64"
ZIG_VARIABLES = ("ZIG_GLOBAL_CACHE_DIR", "ZIG_LOCAL_CACHE_DIR")
STEP = re.compile(r"^## \[\s*([\d.]+)s\] \S+: \[(\d+)/(\d+)\] ")
MARK = "## bench-ffmpeg step"
OWN = "prebake's own steps"


def logged_commands(log: str, where: Path) -> list[tuple[Path, str]]:
    """The (folder, command line) of each of the recipe's steps, in order: the ``$ cd … && …``
    line after each ``## [ 5.5s] ffmpeg: [k/N] …`` (the guards' own compiles have no ``cd``)."""
    out: list[tuple[Path, str]] = []
    lines = log.splitlines()
    for i, line in enumerate(lines):
        if STEP.match(line) and i + 1 < len(lines):
            m = re.match(r"\$ cd ('[^']*'|\S+) && (.*)$", lines[i + 1])
            if m:
                out.append((Path(shlex.split(m.group(1))[0]), m.group(2)))
    if not out:
        raise SystemExit(f"{where}: no recipe command (did the build run its commands?)")
    return out


def by_hand_script(commands: list[tuple[Path, str]]) -> str:
    """The commands as one ``sh -e`` script, each after a line that stamps the time (for the
    phases; one ``date`` each)."""
    body = ["set -e"]
    for k, (cwd, line) in enumerate(commands, 1):
        body += [f'echo "{MARK} {k} $(date +%s.%N)"', f"cd {shlex.quote(str(cwd))}", line]
    body.append(f'echo "{MARK} end $(date +%s.%N)"')
    return "\n".join(body) + "\n"


def phases_from_marks(text: str) -> list[float]:
    """Seconds of each by-hand command, from the script's stamps."""
    stamps = [float(m.group(1)) for m in re.finditer(rf"^{MARK} \S+ ([\d.]+)$", text, re.M)]
    return [b - a for a, b in pairwise(stamps)]


def phases_from_steps(log: str, guards: float | None) -> list[float]:
    """Seconds of each of prebake's recipe commands, from its log's step times."""
    starts = [float(m.group(1)) for m in (STEP.match(ln) for ln in log.splitlines()) if m]
    ends = [*starts[1:], guards if guards is not None else starts[-1]]
    return [b - a for a, b in zip(starts, ends, strict=True)]


def unit_folder(log: str, where: Path) -> Path:
    """The unit's work folder, from its log's ``# tools folder …/toolchain/tools`` line."""
    m = re.search(r"^# tools folder (.+)/toolchain/tools \(first on PATH\):$", log, re.M)
    if m is None:
        raise SystemExit(f"{where}: no tools folder line (not a configure-and-make unit?)")
    return Path(m.group(1))


def inside(folder: Path, ws: Path) -> Path:
    """``folder``, if it is in the workspace's work folders (the benchmark deletes it)."""
    if ws / ".prebake" / "work" not in folder.resolve().parents:
        raise SystemExit(f"{folder}: not in {ws / '.prebake' / 'work'}; not deleting it")
    return folder


def label(line: str) -> str:
    """A command's first words for the table: ``configure``, ``make -j2``, ``cp``."""
    words = shlex.split(line)
    name = Path(words[0]).name
    return f"{name} {words[1]}"[:28] if name == "make" and len(words) > 1 else name


def fresh_zig_cache(folder: Path, template: Path | None) -> dict[str, str]:
    shutil.rmtree(folder, ignore_errors=True)
    if template is None:
        folder.mkdir(parents=True)
    else:
        shutil.copytree(template, folder, symlinks=True)
    return {v: str(folder) for v in ZIG_VARIABLES}


def megabytes(folder: Path) -> float:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 1e6


@dataclass(frozen=True)
class Run:
    through: float  # prebake build --unit … --force, the whole command
    by_hand: float
    skip: float
    sources: float  # before the recipe's first command (source, tools, zig's warm-up)
    after: float | None  # from the guards to the unit's end
    unit: float  # the unit, from its timing record (or the command)
    load_start: float
    load_max: float

    @property
    def ratio(self) -> float:
        return self.through / self.by_hand

    @property
    def own(self) -> float | None:
        return None if self.after is None else self.sources + self.after

    @property
    def share(self) -> float | None:
        return None if self.own is None else self.own / self.unit

    @property
    def quiet(self) -> bool:
        return self.load_max <= QUIET


@dataclass(frozen=True)
class Bench:
    ws: Path
    unit: str
    env: dict[str, str]  # the caller's, without a launcher
    scratch: Path  # the benchmark's own folders (zig caches, logs)
    template: Path | None  # zig's C runtime, copied for each side; None: empty caches

    @property
    def prebake(self) -> list[str]:
        return [sys.executable, "-m", "prebake", "-C", str(self.ws), "build", "--unit", self.unit]


def one_run(b: Bench) -> Run:
    slug = b.unit.replace("/", "--")
    logfile = b.ws / ".prebake" / "logs" / f"{slug}.log"
    timing = logfile.with_name(f"{slug}.timing.json")
    timing.unlink(missing_ok=True)  # this run's, not an earlier one's
    env = {**b.env, **fresh_zig_cache(b.scratch / "zig-prebake", b.template)}
    # nothing of an earlier build: its work folder (the unpacked source, which prebake keeps
    # when unchanged) and its compressed xz blocks (prebake.package.blocks)
    if logfile.is_file():
        shutil.rmtree(inside(unit_folder(logfile.read_text(), logfile), b.ws), ignore_errors=True)
    shutil.rmtree(b.ws / ".prebake" / "blocks" / slug, ignore_errors=True)
    os.sync()  # the deletions and the cache's copy written out before the clock starts
    watch = LoadWatch()
    through = timed([*b.prebake, "--force"], env, output=b.scratch / "prebake.out")
    watch.stop()
    load_start, high = watch.start, watch.high
    log = logfile.read_text()
    # what the run set up before the recipe's first command (its tools folder's scripts),
    # where a launcher would show
    before = log.split(f"] {b.unit.split('/', 1)[0]}: [1/", 1)[0]
    if "ccache" in before:
        raise SystemExit(f"{logfile}: the run named ccache before its first command; "
                         "not a cold build")
    logged = logged_env(log)
    if any(logged.get(v) != env[v] for v in ZIG_VARIABLES):
        raise SystemExit(f"{logfile}: the build's environment does not name the fresh zig "
                         f"cache {env[ZIG_VARIABLES[0]]}: not a cold build")
    steps = step_times(log)
    guards = next((t for s, t in steps.items() if ": guards" in s), None)
    first = next(t for s, t in steps.items() if re.search(r": \[1/\d+\] ", s))
    warm_at = next((t for s, t in steps.items() if s.startswith("zig: ")), first)
    unit = (json.loads(timing.read_text())["seconds"] if timing.is_file()
            else max(steps.values()) if steps else through)
    commands = logged_commands(log, logfile)
    hand_env = {k: v for k, v in logged.items() if not k.startswith("PREBAKE_STEADY_")}
    hand_env.update(fresh_zig_cache(b.scratch / "zig-by-hand", b.template))
    # a release engineer's script starts from an empty build folder and prefix (prebake's run
    # has packaged and published its prefix: nothing of it is needed again)
    for folder in (commands[0][0], Path(hand_env["prefix"]) if "prefix" in hand_env else None):
        if folder is not None:
            shutil.rmtree(inside(folder, b.ws), ignore_errors=True)
    commands[0][0].mkdir(parents=True)
    os.sync()
    hand_log = b.scratch / "by-hand.out"
    watch = LoadWatch()
    by_hand = timed(["/bin/sh", "-c", by_hand_script(commands)], hand_env,
                    cwd=commands[0][0], output=hand_log)
    watch.stop()
    high = max(high, watch.high)
    skip = timed(b.prebake, env)
    run = Run(through, by_hand, skip, first, None if guards is None else unit - guards, unit,
              load_start, high)

    print(f"{f'prebake build --unit {b.unit} --force':50s}{through:8.1f} s")
    print(f"{'the same commands by hand (one sh script)':50s}{by_hand:8.1f} s")
    print(f"{'ratio prebake / by hand':50s}{run.ratio:8.3f}x (target <= 1.05)")
    for (_, line), p, h in zip(commands, phases_from_steps(log, guards),
                               phases_from_marks(hand_log.read_text()), strict=False):
        print(f"  {label(line):28s} prebake {p:7.1f} s   by hand {h:7.1f} s")
    print(f"{'source (fetch, verify, unpack), tools folder':50s}{warm_at:8.1f} s")
    print(f"{'zig C runtime warm-up':50s}{first - warm_at:8.1f} s")
    if run.own is not None:
        print(f"{'guards + version proof + packaging + publish':50s}{run.after:8.1f} s")
        print(f"{OWN:50s}{run.own:8.1f} s ({run.share:.1%} "
              f"of the unit's {unit:.0f} s)")
    print(f"{'second run (skip by input hash)':50s}{skip:8.2f} s")
    print(f"zig caches after the run: prebake's {megabytes(b.scratch / 'zig-prebake'):.0f} MB, "
          f"by hand {megabytes(b.scratch / 'zig-by-hand'):.0f} MB")
    print(f"load: {run.load_start:.1f} at the start, {run.load_max:.1f} at most "
          f"({'quiet' if run.quiet else 'not quiet'})", flush=True)
    return run


def zig_runtime(ws: Path, platform: str, env: dict[str, str], folder: Path) -> float:
    """Build zig's C runtime for the platform's target into ``folder`` as prebake's warm-up
    does (same compilers, linked from ``/``); returns its seconds."""
    tc = load_platforms(ws)[platform].toolchain
    if tc is None or not any("zig" in word for word in tc.cc):
        raise SystemExit(f"{ws}: platform {platform} does not build with zig; "
                         "use --zig-cache empty")
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    t0 = time.perf_counter()
    failed = warm(tc.cc, tc.cxx, {**env, **{v: str(folder) for v in ZIG_VARIABLES}})
    if failed:
        raise SystemExit(f"zig's C runtime did not build: {'; '.join(failed)}")
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--workspace", type=Path, default=WS, help="workspace (default: the flagship)")
    ap.add_argument("--unit", default=UNIT, help=f"unit to build (default {UNIT})")
    ap.add_argument("--zig-cache", choices=("runtime", "empty"), default="runtime",
                    help="each side's fresh zig cache: zig's C runtime only (default), or empty")
    ap.add_argument("--runs", type=int, default=1, help="runs, one after the other")
    args = ap.parse_args()
    ws = args.workspace.resolve()
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    # cold: no launcher at all (see bench_flagship); zig's cache folders come per side
    env.pop("PREBAKE_COMPILER_LAUNCHER", None)
    for v in ZIG_VARIABLES:
        env.pop(v, None)
    scratch = ws / ".prebake" / "bench-ffmpeg"
    scratch.mkdir(parents=True, exist_ok=True)
    template = None
    if args.zig_cache == "runtime":
        template = scratch / "zig-runtime"
        secs = zig_runtime(ws, args.unit.split("/", 1)[1], env, template)
        print(f"zig's C runtime for the target, built once into the template: {secs:.1f} s "
              f"({megabytes(template):.0f} MB)")
    b = Bench(ws, args.unit, env, scratch, template)
    print(f"cold: no compiler launcher, a fresh zig cache per side ({args.zig_cache}), "
          f"{args.runs} run(s)", flush=True)
    runs = []
    for i in range(1, args.runs + 1):
        print(f"--- run {i}", flush=True)
        runs.append(one_run(b))
    if len(runs) > 1:
        summary(runs)


def summary(runs: list[Run]) -> None:
    print("--- summary")
    print("run  prebake  by hand  ratio   own    share   load start/max")
    for i, r in enumerate(runs, 1):
        own = f"{r.own:5.1f}" if r.own is not None else "  -  "
        share = f"{r.share:6.1%}" if r.share is not None else "   -  "
        print(f"{i:3d}  {r.through:7.1f}  {r.by_hand:7.1f}  {r.ratio:5.3f}  {own}  {share}  "
              f"{r.load_start:4.1f}/{r.load_max:4.1f}{'' if r.quiet else '  (not quiet)'}")
    for label, chosen in (("all runs", runs), ("quiet runs", [r for r in runs if r.quiet])):
        if not chosen:
            print(f"{label}: none")
            continue
        ratios = [r.ratio for r in chosen]
        shares = [r.share for r in chosen if r.share is not None]
        line = (f"{label} ({len(chosen)}): ratio median {statistics.median(ratios):.3f}x, "
                f"spread {min(ratios):.3f}-{max(ratios):.3f}x (target <= 1.05)")
        if shares:
            line += (f"; prebake's share median {statistics.median(shares):.1%}, spread "
                     f"{min(shares):.1%}-{max(shares):.1%}")
        print(line)


if __name__ == "__main__":
    main()
