"""wasm inspection speed on the four onnxruntime-web 1.30.0 builds vs ``wasm-objdump -x``.

``wasm-objdump -x`` (all section details) is what a release engineer would otherwise run to
see imports, exports, memory and tags; prebake's default pass reads the same headers and decodes
every instruction in C (the EH encoding, SIMD and the feature list are facts of every module),
plus the Asyncify byte patterns and the JS glue. The bar (docs/binary-formats.md §7): about
0.2 s on the 28 MB jsep build. ``--deep`` (per-family counts in the details, Asyncify's
instrumentation count) is timed too, against ``wasm-objdump -d`` (a full disassembly), when
asked for.

Prints per-file medians and the ratio prebake / wasm-objdump (below 1.0: prebake is faster),
both for the library call and for the whole ``prebake inspect`` process when the command exists.

    .venv/bin/python benchmarks/bench_wasm.py [--repeat N] [--deep]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path

from _timing import median_time

from prebake.inspect import ParseOptions, inspect

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests import support  # noqa: E402  (the npm cache and fetch live with the tests)

BUILDS = ("ort-wasm-simd-threaded.wasm", "ort-wasm-simd-threaded.asyncify.wasm",
          "ort-wasm-simd-threaded.jsep.wasm", "ort-wasm-simd-threaded.jspi.wasm")


def objdump(args: list[str], path: Path) -> Callable[[], bool]:
    def run() -> bool:
        proc = subprocess.run(["wasm-objdump", *args, str(path)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, check=False)
        return proc.returncode == 0
    return run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--deep", action="store_true", help="also time the full decode vs -d")
    args = ap.parse_args()
    dist = support.npm_package("web") / "dist"
    print(f"{'file':40} {'MB':>6} {'prebake':>9} {'objdump -x':>11} {'ratio':>6}")
    total_ours = total_ref = 0.0
    for name in BUILDS:
        path = dist / name
        ours = median_time(partial(inspect, path, ParseOptions(symbols=True)), args.repeat)
        readable = objdump(["-x"], path)()
        ref = median_time(objdump(["-x"], path), args.repeat) if readable else float("nan")
        mb = path.stat().st_size / 1e6
        note = "" if readable else "  (wabt 1.0.32 cannot read exnref)"
        print(f"{name:40} {mb:6.1f} {ours:8.3f}s {ref:10.3f}s {ours / ref:6.2f}{note}")
        if readable:
            total_ours += ours
            total_ref += ref
    print(f"{'default pass, files wabt reads':40} {'':6} {total_ours:8.3f}s {total_ref:10.3f}s "
          f"{total_ours / total_ref:6.2f}")
    cmd = [sys.executable, "-m", "prebake", "inspect", str(dist / BUILDS[2])]
    proc_t = median_time(lambda: subprocess.run(cmd, stdout=subprocess.DEVNULL,
                                                stderr=subprocess.DEVNULL, check=False),
                         max(1, args.repeat // 2))
    print(f"whole `prebake inspect` process on the jsep build: {proc_t:.3f}s")
    if args.deep:
        print(f"\n{'full decode':40} {'MB':>6} {'prebake':>9} {'objdump -d':>11} {'ratio':>6}")
        for name in BUILDS:
            path = dist / name
            ours = median_time(partial(inspect, path, ParseOptions(deep=True)), 1)
            readable = objdump(["-h"], path)()
            ref = median_time(objdump(["-d"], path), 1) if readable else float("nan")
            print(f"{name:40} {path.stat().st_size / 1e6:6.1f} {ours:8.2f}s {ref:10.2f}s "
                  f"{ours / ref:6.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
