"""A stand-in for onnxruntime's ``cmake/external/emsdk`` that is the pinned Emscripten.

onnxruntime's ``build.py`` runs ``cmake/external/emsdk/emsdk install/activate VERSION`` and then
configures with ``cmake/external/emsdk/upstream/emscripten/cmake/Modules/Platform/
Emscripten.cmake``: left alone it downloads a compiler of its own choosing. The stand-in makes
that folder the platform's verified Emscripten instead: its ``emsdk`` script installs nothing —
it checks that the version asked for is the one ``emcc`` on ``PATH`` reports (failing
otherwise), and links ``upstream/emscripten`` to the folder that ``emcc`` really lives in. It
runs where ``build.py`` runs (inside a toolchain environment: Debian's ``/usr/share/emscripten``).

``python -m prebake.recipes.builtin.onnxruntime.emsdk_standin DIR``
"""

from __future__ import annotations

import sys
from pathlib import Path

SCRIPT = """#!/bin/sh
# prebake's stand-in for emsdk: the pinned Emscripten is already the toolchain; install and
# activate only check that the version asked for is the one emcc reports.
set -eu
case "${1:-}" in
  install|activate) ;;
  *) echo "emsdk stand-in: only install/activate VERSION" >&2; exit 2 ;;
esac
want="${2:?emsdk stand-in: no version}"
emcc=$(command -v emcc) || { echo "emsdk stand-in: no emcc on PATH" >&2; exit 1; }
have=$("$emcc" --version | sed -n '1s/.*) \\([0-9][0-9.]*\\).*/\\1/p')
if [ "$have" != "$want" ]; then
  echo "emsdk stand-in: asked for $want, but the toolchain's emcc ($emcc) is $have" >&2
  exit 1
fi
root=$(dirname "$(readlink -f "$emcc")")
here=$(dirname "$0")
mkdir -p "$here/upstream"
ln -sfn "$root" "$here/upstream/emscripten"
echo "emsdk stand-in: $1 $want: emcc $have at $root"
"""


def make(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "emsdk"
    script.write_text(SCRIPT)
    script.chmod(0o755)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        raise SystemExit(2)
    make(Path(sys.argv[1]))
    print(f"emsdk stand-in: {sys.argv[1]}/emsdk")
