"""Packaging speed and size: prebake's deterministic ``tar.xz`` vs ``tar -c | xz -T0 -9``.

Builds a tree of real, distinct binaries (LLVM 14's static libraries from ``/usr/lib/llvm-14/lib``
plus libclang-cpp, as a from-source onnxruntime build leaves many large archives; 100 MiB by
default), then times, as whole processes side by side in one run (alternating rounds, median):

- ``tar -c | xz -T0 -9`` (what a release engineer would otherwise write),
- prebake's packaging step as a process: ``write_asset`` of the tree, what ``prebake build``
  runs after a unit's install step (blocks sized from the input, compressed in parallel),

and prints each one's time and size and the ratios (bars: time <= 0.6x, size <= 1.02x). A second
line gives the library-level time of ``write_tar_xz`` alone, in this process.

``--warm`` times the block cache instead, on a tree of the flagship's shape (one static library
of ``--mb`` MiB, 68 by default, made by ``ar -M`` from LLVM 14's archives, and its headers), each
packaging as a whole process, alternating rounds: a cold write (no cache), and a warm write after
a recipe-only change (another input hash in the manifest; the library's blocks in the unit's
cache from the build before), whose bytes must be the cold write's of the same manifest.
``--proof`` times what a warm write pays per cached block instead: one block of that library,
as the writer cuts it, compressed once, then its entry proven (``prebake.package.blocks``).
Run: ``.venv/bin/python benchmarks/bench_package.py [--mb 100] [--rounds 3] [--warm | --proof]``.
"""

from __future__ import annotations

import argparse
import lzma
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from prebake.package.archive import block_size_for, collect_tree, tar_size, write_tar_xz

SOURCE = Path("/usr/lib/llvm-14/lib")

EXTRA = (Path("/usr/lib/x86_64-linux-gnu/libclang-cpp.so.14"),
         Path("/usr/lib/llvm-14/lib/libLLVM-14.so"))


def make_tree(dest: Path, megabytes: int) -> int:
    """Distinct real binaries only: copies of one file would let whichever tool happens to put
    them within one dictionary window of each other win on size, which measures luck."""
    libs = sorted(SOURCE.glob("*.a"), key=lambda p: p.name) + [p for p in EXTRA if p.exists()]
    total = 0
    (dest / "lib").mkdir(parents=True)
    (dest / "include").mkdir()
    for src in libs:
        if total + src.stat().st_size > megabytes * 1024 * 1024:
            continue
        shutil.copyfile(src, dest / "lib" / src.name)
        total += src.stat().st_size
    for h in sorted(Path("/usr/lib/llvm-14/include/llvm-c").glob("*.h")):
        shutil.copyfile(h, dest / "include" / h.name)
    return total


def make_flagship_tree(dest: Path, megabytes: int) -> int:
    """One static library of about ``megabytes`` MiB (real LLVM 14 objects, merged by ``ar
    -M``, as onnxruntime's bundle step makes its 68 MB one), its headers and a licence."""
    libs = sorted(SOURCE.glob("*.a"), key=lambda p: p.name)
    (dest / "lib").mkdir(parents=True)
    (dest / "include").mkdir()
    (dest / "share" / "licenses").mkdir(parents=True)
    script, total = ["CREATE lib/libbig.a"], 0
    for src in libs:
        if total + src.stat().st_size > megabytes * 1024 * 1024:
            continue
        script.append(f"ADDLIB {src}")
        total += src.stat().st_size
    script += ["SAVE", "END"]
    subprocess.run(["ar", "-M"], input="\n".join(script) + "\n", text=True, cwd=dest,
                   check=True)
    for h in sorted(Path("/usr/lib/llvm-14/include/llvm-c").glob("*.h")):
        shutil.copyfile(h, dest / "include" / h.name)
    shutil.copyfile("/usr/share/common-licenses/Apache-2.0",
                    dest / "share" / "licenses" / "LICENSE")
    return (dest / "lib" / "libbig.a").stat().st_size


PACKAGE = """
import sys
from pathlib import Path
from prebake.package.archive import block_cache, write_asset
from prebake.package.manifest_builder import make_manifest
from prebake.package.naming import asset_id
aid = asset_id("llvm", "14.0.6", "linux-x86_64")
m = make_manifest(aid, input_hash=sys.argv[3] if len(sys.argv) > 3 else "0" * 64,
                  toolchain={"cc": ["cc"], "cxx": ["c++"], "ar": ["ar"],
                  "pin": None, "pin_version": None, "version": "bench"}, link_order=[])
cache = block_cache(Path(sys.argv[4])) if len(sys.argv) > 4 else None
print(write_asset(Path(sys.argv[1]), aid, m, Path(sys.argv[2]), cache=cache))
if cache is not None:
    print(cache.summary())
"""


def baseline(tree: Path, out: Path) -> float:
    t = time.perf_counter()
    with open(out, "wb") as fh:
        tar = subprocess.Popen(["tar", "-C", str(tree), "-c", "."], stdout=subprocess.PIPE)
        xz = subprocess.run(["xz", "-T0", "-9"], stdin=tar.stdout, stdout=fh, check=True)
        assert tar.stdout is not None
        tar.stdout.close()
        assert tar.wait() == 0 and xz.returncode == 0
    return time.perf_counter() - t


def prebake(tree: Path, out_dir: Path, input_hash: str = "0" * 64,
            cache: Path | None = None) -> tuple[float, Path, str]:
    """The packaging step as a whole process; (seconds, the asset, the block cache's line:
    how many blocks came from it and the seconds their proofs took)."""
    shutil.rmtree(out_dir, ignore_errors=True)
    argv = [sys.executable, "-c", PACKAGE, str(tree), str(out_dir), input_hash]
    t = time.perf_counter()
    proc = subprocess.run([*argv, str(cache)] if cache else argv, capture_output=True,
                          text=True, check=True)
    elapsed = time.perf_counter() - t
    lines = proc.stdout.splitlines()
    return elapsed, Path(lines[0]), lines[1] if len(lines) > 1 else ""


def warm(args: argparse.Namespace, d: Path) -> None:
    size = make_flagship_tree(d / "tree", args.mb)
    print(f"tree: one {size / 2**20:.0f} MiB static library (LLVM 14's objects) and its headers, "
          f"{os.cpu_count()} cores, median of {args.rounds}, load {os.getloadavg()[0]:.1f}",
          flush=True)
    prebake(d / "tree", d / "fill", "1" * 64, d / "blocks")  # the build before: fills the cache
    cold_t, warm_t = [], []
    for i in range(args.rounds):
        changed = f"{i + 2:x}" * 64  # a recipe-only change: another input hash
        t, cold, _ = prebake(d / "tree", d / "cold", changed)
        cold_t.append(t)
        t, hot, said = prebake(d / "tree", d / "warm", changed, d / "blocks")
        warm_t.append(t)
        assert hot.read_bytes() == cold.read_bytes(), "the warm write's bytes are the cold one's"
        print(f"  round: cold {cold_t[-1]:.1f} s, warm {warm_t[-1]:.1f} s (same bytes; {said})",
              flush=True)
    ct, wt = statistics.median(cold_t), statistics.median(warm_t)
    print(f"{'cold (no block cache)':36} {ct:7.1f} s")
    print(f"{'warm (a recipe-only change)':36} {wt:7.1f} s  ({wt / ct:.2f}x)")


def proof(args: argparse.Namespace, d: Path) -> None:
    """One block of the flagship-shaped library, as the writer cuts it: compressed once, then
    its entry's proof timed (``blocks.proven``: framing, the first chunk again, decompressing),
    best of ``--rounds``, beside the one compression the proof lets a warm write skip."""
    from prebake.package.archive import ENCODING
    from prebake.package.blocks import proven

    make_flagship_tree(d / "tree", args.mb)
    data = (d / "tree" / "lib" / "libbig.a").read_bytes()
    block = data[:block_size_for(len(data))]
    t0 = time.perf_counter()
    entry = ENCODING.compress(block)
    cold = time.perf_counter() - t0
    times = []
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        assert proven(entry, block, ENCODING) is None
        times.append(time.perf_counter() - t0)
    print(f"one block of {len(block) / 2**20:.1f} MiB (dictionary "
          f"{ENCODING.dict_size(len(block)) / 2**20:.0f} MiB), load {os.getloadavg()[0]:.1f}")
    print(f"{'compress it (the cold path, one core)':40} {cold:7.2f} s")
    t0 = time.perf_counter()
    assert lzma.decompress(entry) == block
    alone = time.perf_counter() - t0
    print(f"{'prove its entry (best of ' + str(args.rounds) + ')':40} {min(times):7.2f} s  "
          f"(rounds {', '.join(f'{t:.2f}' for t in times)})")
    print(f"{'  of which decompressing it':40} {alone:7.2f} s  (the whole of the check before)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3,
                    help="alternate baseline and prebake this many times; the median counts")
    ap.add_argument("--warm", action="store_true",
                    help="the block cache: cold against warm on one big library")
    ap.add_argument("--proof", action="store_true",
                    help="the proof of one block-cache entry against compressing its block")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-package-") as tmp:
        d = Path(tmp)
        if args.proof:
            if args.mb == 100:
                args.mb = 68
            proof(args, d)
            return
        if args.warm:
            if args.mb == 100:
                args.mb = 68
            warm(args, d)
            return
        size = make_tree(d / "tree", args.mb)
        stream = tar_size(collect_tree(d / "tree"))
        print(f"tree: {size / 2**20:.0f} MiB of distinct LLVM 14 binaries, {os.cpu_count()} cores, "
              f"blocks of {block_size_for(stream) / 2**20:.1f} MiB, median of {args.rounds}, "
              f"load {os.getloadavg()[0]:.1f}", flush=True)
        base_t, ours_t = [], []
        base_s = ours_s = 0
        for _ in range(args.rounds):
            base_t.append(baseline(d / "tree", d / "base.tar.xz"))
            base_s = (d / "base.tar.xz").stat().st_size
            t, asset, _ = prebake(d / "tree", d / "out")
            ours_s = asset.stat().st_size
            ours_t.append(t)
            print(f"  round: tar|xz {base_t[-1]:.1f} s, prebake {t:.1f} s", flush=True)
        bt, ot = statistics.median(base_t), statistics.median(ours_t)
        print(f"{'tar -c | xz -T0 -9':36} {bt:7.1f} s  {base_s / 2**20:8.2f} MiB")
        print(f"{'prebake packaging (write_asset)':36} {ot:7.1f} s  {ours_s / 2**20:8.2f} MiB")
        print(f"ratio time = {ot / bt:.2f} (bar <= 0.6)   ratio size = {ours_s / base_s:.3f} "
              "(bar <= 1.02)")
        t0 = time.perf_counter()
        with open(d / "lib.tar.xz", "wb") as fh:
            write_tar_xz(collect_tree(d / "tree"), fh)
        print(f"library (write_tar_xz in this process): {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
