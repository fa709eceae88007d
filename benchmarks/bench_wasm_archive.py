"""``prebake inspect --json`` over the flagship's wasm archive vs ``llvm-nm`` on the same file.

The flagship's wasm asset (``onnxruntime-<v>-wasm.tar.xz``, made by ``scripts/long-leg``) holds
one 68 MB archive of about 700 exnref objects. Reading it, prebake decodes every instruction
of every function body and reads every section (the EH encoding, SIMD and the feature list are
facts of every member, not only under ``--deep``), where ``llvm-nm`` reads only the symbol
tables: the bar is that ``inspect --json`` stays within 2x ``llvm-nm``.
Both run as whole processes, alternating, outputs to files; the median of the rounds counts.
``prebake inspect --symbols`` against ``llvm-nm -C`` is printed beside it, without a bar.

Run: ``.venv/bin/python benchmarks/bench_wasm_archive.py [--rounds 7] [ASSET_OR_ARCHIVE]``
(default: the asset in ``examples/flagship/.prebake/dist/wasm``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tarfile
import tempfile
from pathlib import Path

from bench_symbols import PREBAKE, run_once

ROOT = Path(__file__).resolve().parent.parent
DIST = ROOT / "examples" / "flagship" / ".prebake" / "dist" / "wasm"
BAR = 2.0


def archive_of(given: Path | None, tmp: Path) -> Path:
    """The ``.a`` to time: given, or unpacked from the asset (given or the flagship's own)."""
    if given is None:
        assets = sorted(DIST.glob("onnxruntime-*-wasm.tar.xz"))
        if not assets:
            raise SystemExit(f"no flagship asset in {DIST}: run ./scripts/long-leg first")
        given = assets[-1]
    if given.suffix == ".a":
        return given
    with tarfile.open(given) as tar:
        member = next((m for m in tar.getmembers() if m.name.endswith(".a") and m.isfile()),
                      None)
        if member is None:
            raise SystemExit(f"{given}: no archive inside")
        tar.extract(member, tmp, filter="data")
    return tmp / member.name


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", nargs="?", type=Path)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    nm = next((p for p in (shutil.which(f"llvm-nm-{v}") for v in (21, 19, 16, 15, 14)) if p),
              shutil.which("llvm-nm"))
    if nm is None:
        print("needs llvm-nm (llvm-14 or newer)", file=sys.stderr)
        return 2
    shm = "/dev/shm" if Path("/dev/shm").is_dir() and os.access("/dev/shm", os.W_OK) else None
    with tempfile.TemporaryDirectory(prefix="bench-wasm-archive-", dir=shm) as tmp_name:
        tmp = Path(tmp_name)
        archive = archive_of(args.path, tmp)
        archive.read_bytes()  # the page cache warm for both sides
        cmds = {
            "llvm-nm": [nm, str(archive)],
            "prebake inspect --json": [*PREBAKE, "--json", str(archive)],
            "llvm-nm -C": [nm, "-C", str(archive)],
            "prebake inspect --symbols": [*PREBAKE, "--symbols", str(archive)],
        }
        print(f"{archive.name}: {archive.stat().st_size / 1e6:.0f} MB, {Path(nm).name}, "
              f"{os.cpu_count()} cores, median of {args.rounds} alternating rounds, "
              f"load {os.getloadavg()[0]:.1f}")
        runs: dict[str, list[dict[str, float]]] = {k: [] for k in cmds}
        for _ in range(args.rounds):
            for label, argv in cmds.items():
                runs[label].append(run_once(argv, tmp / "out"))
    med = {k: {m: statistics.median(r[m] for r in v) for m in v[0]} for k, v in runs.items()}
    print(f"{'command':28} {'wall s':>7} {'cpu s':>7} {'peak RSS':>9}")
    for label, m in med.items():
        print(f"{label:28} {m['wall']:7.2f} {m['cpu']:7.2f} {m['rss']:6.0f} MB")
    ratio = med["prebake inspect --json"]["wall"] / med["llvm-nm"]["wall"]
    cpu = med["prebake inspect --json"]["cpu"] / med["llvm-nm"]["cpu"]
    ok = ratio <= BAR
    print(f"ratio --json / llvm-nm = {ratio:.2f}  bar <= {BAR}  {'ok' if ok else 'MISSED'}  "
          f"(cpu {cpu:.2f})")
    sym = med["prebake inspect --symbols"]["wall"] / med["llvm-nm -C"]["wall"]
    print(f"ratio --symbols / llvm-nm -C = {sym:.2f}  (no bar)")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
