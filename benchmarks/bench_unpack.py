"""Unpacking speed: prebake's checked, all-or-nothing ``safe_extract`` vs ``tar -xJf``.

Packs ~150 MB of real binaries (LLVM 14's static libraries) with ``tar -cJf`` (what a user's
release would hold), then in one run times ``tar -xJf`` (no checks at all) against
``safe_extract`` (every member judged, budgets kept, temp folder + rename), best of three, and
prints the time ratio. Both decompress with liblzma on one core, so the ratio is the price of
the checks. Run: ``.venv/bin/python benchmarks/bench_unpack.py [--mb 150]``.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
from pathlib import Path

from _timing import best

from prebake.extract import safe_extract

SOURCE = Path("/usr/lib/llvm-14/lib")


def make_tree(dest: Path, megabytes: int) -> int:
    total = 0
    (dest / "lib").mkdir(parents=True)
    (dest / "include").mkdir()
    for lib in sorted(SOURCE.glob("*.a")):
        if total >= megabytes << 20:
            break
        shutil.copyfile(lib, dest / "lib" / lib.name)
        total += lib.stat().st_size
    (dest / "include" / "demo.h").write_text("int demo(void);\n")
    (dest / "lib" / "libdemo.so").symlink_to("libLLVMCore.a")
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--mb", type=int, default=150)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-unpack-") as tmp:
        root = Path(tmp)
        size = make_tree(root / "tree", args.mb)
        asset = root / "asset.tar.xz"
        subprocess.run(["tar", "-cJf", str(asset), "-C", str(root / "tree"), "."], check=True)
        print(f"tree {size / 1e6:.0f} MB, asset {asset.stat().st_size / 1e6:.0f} MB")

        def with_tar() -> None:
            out = root / "tar-out"
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir()
            subprocess.run(["tar", "-xJf", str(asset), "-C", str(out)], check=True)

        def with_prebake() -> None:
            out = root / "prebake-out"
            shutil.rmtree(out, ignore_errors=True)
            safe_extract(asset, out)

        t_tar = best(with_tar, 3)
        t_pb = best(with_prebake, 3)
        print(f"tar -xJf        {t_tar:6.2f} s")
        print(f"safe_extract    {t_pb:6.2f} s")
        print(f"ratio safe_extract / tar: {t_pb / t_tar:.2f}x")


if __name__ == "__main__":
    main()
