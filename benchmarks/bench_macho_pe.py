"""Mach-O and PE facts of onnxruntime-node's real libraries vs the LLVM tools a user would run.

For each library, prebake's ``inspect`` (library call, facts only, then with ``--symbols``) is
timed against the llvm-14 commands that print the same facts: ``llvm-objdump --macho
--private-headers`` + ``llvm-nm`` for the dylib, ``llvm-readobj --file-headers --coff-imports
--coff-exports --coff-debug-directory`` for the DLLs. Medians and ratios (prebake / llvm; below
1.0 means prebake is faster; llvm's times include process start-up, prebake's do not).

    .venv/bin/python benchmarks/bench_macho_pe.py [--repeat N]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from functools import partial
from pathlib import Path

from _timing import median_time

from prebake.inspect import ParseOptions, inspect

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests import support  # noqa: E402  (the npm fixture's cache, shared with the tests)

NAPI = "bin/napi-v6"
CASES: list[tuple[str, list[list[str]]]] = [
    ("darwin/arm64/libonnxruntime.1.30.0.dylib",
     [["llvm-objdump", "--macho", "--private-headers"], ["llvm-nm"]]),
    ("win32/x64/onnxruntime.dll",
     [["llvm-readobj", "--file-headers", "--coff-imports", "--coff-exports",
       "--coff-debug-directory"]]),
    ("win32/arm64/onnxruntime.dll",
     [["llvm-readobj", "--file-headers", "--coff-imports", "--coff-exports",
       "--coff-debug-directory"]]),
]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    pkg = support.npm_package("node") / NAPI
    print(f"{'file':44} {'MB':>6} {'llvm':>8} {'facts':>8} {'ratio':>6} {'+syms':>8} {'ratio':>6}")
    for rel, commands in CASES:
        path = pkg / rel

        def llvm(path: Path = path, commands: list[list[str]] = commands) -> None:
            for cmd in commands:
                subprocess.run([*cmd, str(path)], check=True, stdout=subprocess.DEVNULL)

        t_llvm = median_time(llvm, args.repeat)
        t_facts = median_time(partial(inspect, path), args.repeat)
        t_syms = median_time(partial(inspect, path, ParseOptions(symbols=True)), args.repeat)
        mb = path.stat().st_size / 1e6
        print(f"{rel:44} {mb:6.1f} {t_llvm:8.4f} {t_facts:8.4f} {t_facts / t_llvm:6.2f} "
              f"{t_syms:8.4f} {t_syms / t_llvm:6.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
