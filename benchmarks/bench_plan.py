"""``prebake plan`` input hashing vs the hand-kept alternative, ``find | sort | sha256sum``.

What CI scripts otherwise do to decide whether a dependency must rebuild is hash a hand-kept
list of files with coreutils (``find SRC -type f | sort | xargs sha256sum | sha256sum``), once.
prebake derives the inputs itself and hashes every unit: the example workspace's six platforms
times its stages, with the local source tree of each recipe. This benchmark gives the example
workspace's ``vecmath`` a generated source tree of N files (a realistic C++ library's size),
then times, best of R:

* prebake, library call: ``make_plan(ws)`` (every unit of every stage and platform);
* prebake, whole process: ``prebake -C WS plan --json`` (interpreter start-up, store look-ups);
* ``find | sort | xargs sha256sum | sha256sum`` over the same tree (one hash, nothing else).

Run: .venv/bin/python benchmarks/bench_plan.py [--files 3000] [--size 16384] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

from _timing import best

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache" / "bench" / "plan"


def make_workspace(files: int, size: int) -> Path:
    ws = CACHE / f"sdk-{files}-{size}"
    if (ws / ".done").exists():
        return ws
    shutil.rmtree(ws, ignore_errors=True)
    shutil.copytree(ROOT / "examples" / "sdk", ws,
                    ignore=shutil.ignore_patterns("releases", ".prebake", "__pycache__"))
    tree = ws / "src" / "vecmath" / "generated"
    for i in range(files):
        d = tree / f"mod{i % 40:02d}"
        d.mkdir(parents=True, exist_ok=True)
        line = f"int f{i}(int x) {{ return x * {i} + {i % 7}; }}\n"
        (d / f"f{i}.cpp").write_text((line * (size // len(line) + 1))[:size])
    (ws / ".done").write_text("ok\n")
    return ws


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=3000)
    ap.add_argument("--size", type=int, default=16384, help="bytes per generated file")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    from prebake.intake import load_workspace
    from prebake.plan import make_plan

    ws_dir = make_workspace(args.files, args.size)
    src = ws_dir / "src" / "vecmath"
    total = sum(p.stat().st_size for p in src.rglob("*") if p.is_file())
    ws = load_workspace(ws_dir)
    units = len(make_plan(ws).units)  # also warms the page cache and compiler --version lines

    lib = best(lambda: make_plan(ws), args.repeat)
    env = dict(os.environ, PREBAKE_STORE="")
    proc = best(lambda: subprocess.run([sys.executable, "-m", "prebake", "-C", str(ws_dir),
                                        "plan", "--json"], check=True, env=env,
                                       stdout=subprocess.DEVNULL), args.repeat)
    shell = ("find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum")
    coreutils = best(lambda: subprocess.run(["bash", "-c", shell], cwd=src, check=True,
                                            stdout=subprocess.DEVNULL), args.repeat)

    print(f"source tree: {args.files} files, {total / 1e6:.1f} MB; plan: {units} units")
    print(f"find|sort|sha256sum (one hash)          {coreutils * 1000:8.1f} ms")
    print(f"prebake make_plan (every unit)          {lib * 1000:8.1f} ms"
          f"   ratio {lib / coreutils:5.2f}x")
    print(f"prebake plan --json (whole process)     {proc * 1000:8.1f} ms"
          f"   ratio {proc / coreutils:5.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
