"""The proof of a kept source tree, on the flagship's: what it costs against unpacking again, and
against the cheaper proof that was not chosen.

On onnxruntime 1.21.0's Debian ``.orig.tar.xz`` (38 MB, 319 MB of tar; unpacked as its recipe
does: one folder stripped, the CUDA kernels left out, 8555 entries and 113 MB written), or
with ``--source ffmpeg`` FFmpeg 7.1.5's (11 MB; 8653 entries, 83 MB), times, best of
``--rounds`` (alternating):

- **unpack again**: ``safe_extract`` into a fresh folder (what a tree that fails its proof costs);
- **the proof** (``prebake.sources.treeproof.prove``, what a kept tree costs now): the verified
  archive read again and every entry of the tree compared with it, byte for byte;
- **digests on the side** (not chosen): every file of the tree hashed (sha256) and compared with
  digests computed at the unpack and kept in prebake's state folder — cheaper, but that file
  is one a build's commands could rewrite like the record beside the tree
  (same user, ``HOME`` known), so it would be a record the build could have written.

and prints the three with the proof's share of a warm flagship unit (the last recorded ones:
130–144 s, docs/flagship.md). The archive comes from the test fixture's cache
(``tests.support.debian_orig``: downloaded once from the Debian mirror apt uses).
Run: ``.venv/bin/python benchmarks/bench_tree_proof.py [--source ffmpeg] [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests import support  # noqa: E402  (the fixture's download cache)

from prebake.extract import safe_extract  # noqa: E402
from prebake.recipes.builtin.onnxruntime.recipe import NOT_BUILT  # noqa: E402
from prebake.sources.treeproof import Origin, prove, walk  # noqa: E402

WARM_UNIT = 135.0  # seconds: the middle of the recorded warm flagship units
#: name -> (Debian source, version, what its recipe leaves out)
SOURCES = {"onnxruntime": ("onnxruntime", "1.21.0+dfsg", NOT_BUILT),
           "ffmpeg": ("ffmpeg", "7.1.5", ())}


def digests(tree: Path) -> dict[str, str]:
    """Every file's sha256 (the alternative's proof: walk, hash, compare)."""
    out = {}
    for name, seen in walk(tree).items():
        if seen.kind == "file":
            fd = os.open(tree / name, os.O_RDONLY | os.O_NOFOLLOW)
            with os.fdopen(fd, "rb") as fh:
                out[name] = hashlib.file_digest(fh, "sha256").hexdigest()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--source", choices=sorted(SOURCES), default="onnxruntime")
    args = ap.parse_args()
    name, version, skip = SOURCES[args.source]
    archive = support.debian_orig(name, version)
    print(f"{archive.name}: {archive.stat().st_size / 1e6:.1f} MB, load "
          f"{os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(prefix="bench-tree-proof-") as tmp:
        tree = Path(tmp) / "src"
        safe_extract(archive, tree, strip_components=1, skip=skip)
        origin = Origin(archive, 1, (), tuple(skip))
        recorded = digests(tree)
        times: dict[str, list[float]] = {"unpack": [], "proof": [], "digests": []}
        proof = None
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            again = Path(tmp) / "again"
            safe_extract(archive, again, strip_components=1, skip=skip)
            times["unpack"].append(time.perf_counter() - t0)
            shutil.rmtree(again)
            t0 = time.perf_counter()
            proof = prove(tree, origin)
            times["proof"].append(time.perf_counter() - t0)
            assert proof.same, proof.why
            t0 = time.perf_counter()
            assert digests(tree) == recorded
            times["digests"].append(time.perf_counter() - t0)
    assert proof is not None
    print(f"tree: {proof.entries} entries, {proof.compared / 1e6:.1f} MB of files")
    for label, key in (("unpack again (safe_extract)", "unpack"),
                       ("the proof against the archive", "proof"),
                       ("digests on the side (not chosen)", "digests")):
        best = min(times[key])
        print(f"{label:36s} {best:6.2f} s  ({best / WARM_UNIT:.1%} of a {WARM_UNIT:.0f} s warm "
              f"unit; rounds {', '.join(f'{t:.2f}' for t in times[key])})")


if __name__ == "__main__":
    main()
