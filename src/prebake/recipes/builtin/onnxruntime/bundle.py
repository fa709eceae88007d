"""Re-make a bundled static library from its ``ar -M`` script, each library once.

onnxruntime's wasm static library is one archive made of every static library it links
(``bundle_static_library`` in ``cmake/onnxruntime_webassembly.cmake``), written as an ``ar -M``
script of ``ADDLIB`` lines. In 1.21.0 the function lists the libraries it is given by the names
given (``protobuf::libprotobuf-lite``) and the ones it collects by their aliased names
(``libprotobuf-lite``), so the same ``libprotobuf-lite.a`` is added twice: a normal link takes
one copy of each member, but a consumer linking with ``--whole-archive`` gets every protobuf
function twice (prebake's whole-archive proof refused 995 duplicate symbols). This step reads
the script CMake generated, drops an ``ADDLIB`` whose file (by its real path) was already added,
and runs the same ``ar`` on the result, into ``OUT``. A script without duplicates gives the same
members as upstream's own archive; a line it does not know fails.

``python -m prebake.recipes.builtin.onnxruntime.bundle SCRIPT OUT AR``
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from prebake.bounded import read_bounded
from prebake.errors import PrebakeError

MAX_SCRIPT = 1 << 20


def libraries(script: Path) -> tuple[list[Path], list[Path]]:
    """The script's libraries in order, each once, and the repeats left out."""
    try:  # a regular file of at most MAX_SCRIPT bytes, else UnreadableFile (a PrebakeError)
        data = read_bounded(script, MAX_SCRIPT, "ar script")
    except OSError as exc:
        raise PrebakeError(f"{script}: cannot read the ar script ({exc.strerror})") from None
    kept: list[Path] = []
    dropped: list[Path] = []
    seen: set[str] = set()
    for n, raw in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
        line = raw.strip()
        verb, _, arg = line.partition(" ")
        verb = verb.upper()
        if not line or verb in ("CREATE", "SAVE", "END"):
            continue
        if verb != "ADDLIB" or not arg.strip():
            raise PrebakeError(f"{script}:{n}: not an ADDLIB/CREATE/SAVE/END line: {line!r}")
        lib = Path(arg.strip())
        real = os.path.realpath(lib)
        if real in seen:
            dropped.append(lib)
        else:
            seen.add(real)
            kept.append(lib)
    if not kept:
        raise PrebakeError(f"{script}: no ADDLIB line: not a bundle script")
    return kept, dropped


def bundle(script: Path, out: Path, ar: str) -> list[Path]:
    """Write ``out`` from the script's libraries, each once; the repeats it left out."""
    kept, dropped = libraries(script)
    for lib in kept:
        if not lib.is_file():
            raise PrebakeError(f"{script}: ADDLIB {lib}: no such file")
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    partial.unlink(missing_ok=True)
    text = "".join([f"CREATE {partial}\n", *(f"ADDLIB {lib}\n" for lib in kept), "SAVE\nEND\n"])
    proc = subprocess.run([ar, "-M"], input=text, capture_output=True, text=True)
    if proc.returncode != 0 or not partial.is_file():
        partial.unlink(missing_ok=True)
        raise PrebakeError(f"{ar} -M failed for {script}: {proc.stderr.strip()}")
    partial.replace(out)
    return dropped


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        raise SystemExit(2)
    try:
        repeats = bundle(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3])
    except PrebakeError as exc:
        print(f"bundle: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
    for lib in repeats:
        print(f"bundle: left out a second ADDLIB of {lib}")
    print(f"bundle: {sys.argv[2]} from {sys.argv[1]} ({len(repeats)} repeated libraries left out)")
