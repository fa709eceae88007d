"""``prebake diff`` vs libabigail's ``abidiff`` on two versions of a generated C++ library.

The input: a shared library with N exported C++ functions in namespaces (v1), and v2 with 1 %
of them removed and 1 % added, both built with ``g++ -O1 -shared`` and no debug info — so
``abidiff`` compares the ELF symbol tables, the same thing prebake compares (with debug info
abidiff also compares types, which prebake does not claim to do). Both tools must agree on the
removed/added counts; then each runs side by side in this process tree, best of N:

* prebake, library call: ``prebake.diff.diff_paths`` (inspect both, demangle every change);
* prebake, whole process: ``prebake diff A B --json`` (interpreter start-up and imports too);
* ``abidiff A B``.

Run: .venv/bin/python benchmarks/bench_diff.py [--functions 30000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import hashlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

from _timing import best as _best

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache" / "bench" / "diff"


def _source(n: int, version: int) -> str:
    """Functions 0..n-1; v2 drops every 100th and adds n/100 new ones."""
    lines = []
    for i in range(n):
        if version == 2 and i % 100 == 0:
            continue
        lines.append(f"namespace lib{i % 50} {{ int fn{i}(int a, double b) "
                     f"{{ return a + (int)b + {i}; }} }}")
    if version == 2:
        lines += [f"namespace extra {{ long added{i}(long x) {{ return x * {i}; }} }}"
                  for i in range(n // 100)]
    return "\n".join(lines) + "\n"


def _build(n: int) -> tuple[Path, Path]:
    out = []
    for v in (1, 2):
        src = _source(n, v)
        key = hashlib.sha256(src.encode()).hexdigest()[:16]
        lib = CACHE / f"libbench-v{v}-{key}.so"
        if not lib.exists():
            CACHE.mkdir(parents=True, exist_ok=True)
            cc = CACHE / f"v{v}-{key}.cc"
            cc.write_text(src)
            tmp = lib.with_suffix(".tmp")
            subprocess.run(["g++", "-O1", "-fPIC", "-shared", "-o", str(tmp), str(cc)],
                           check=True)
            tmp.rename(lib)
        out.append(lib)
    return out[0], out[1]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--functions", type=int, default=30000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    abidiff = shutil.which("abidiff")
    if abidiff is None:
        print("abidiff not found: apt-get install abigail-tools (scripts/bootstrap does)")
        return 2
    a, b = _build(args.functions)

    from prebake.diff import diff_paths

    result = diff_paths(a, b)
    removed = len(result.of(breaking=True, category="export"))
    added = len(result.of(breaking=False, category="export"))
    proc = subprocess.run([abidiff, str(a), str(b)], capture_output=True, text=True)
    m = re.search(r"(\d+) Removed, (\d+) Added function symbols", proc.stdout)
    if m is None:
        print("could not read abidiff's summary:\n" + proc.stdout[:2000])
        return 2
    if (int(m[1]), int(m[2])) != (removed, added):
        print(f"disagreement: prebake removed/added {removed}/{added}, abidiff {m[1]}/{m[2]}")
        return 1
    print(f"{a.name} vs {b.name}: {args.functions} functions, {removed} removed, "
          f"{added} added (prebake and abidiff agree)")

    def lib() -> object:
        from prebake.inspect.demangle import demangle

        demangle.cache_clear()
        return diff_paths(a, b)

    def cli() -> object:
        return subprocess.run([sys.executable, "-m", "prebake", "diff", str(a), str(b),
                               "--json", "--allow-breaking"], capture_output=True, check=True)

    def abi() -> object:
        return subprocess.run([abidiff, str(a), str(b)], capture_output=True)

    t_lib, t_cli, t_abi = (_best(f, args.repeat) for f in (lib, cli, abi))
    print(f"prebake diff_paths (library call): {t_lib:8.3f} s")
    print(f"prebake diff --json (process):     {t_cli:8.3f} s")
    print(f"abidiff:                           {t_abi:8.3f} s")
    print(f"ratio abidiff / prebake library call: {t_abi / t_lib:.1f}x")
    print(f"ratio abidiff / prebake process:      {t_abi / t_cli:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
