"""Import libraries for a DLL that ships without one, generated from its own export table.

Microsoft's Windows onnxruntime on PyPI is ``onnxruntime.dll`` alone; a consumer links it
through an import library: ``.lib`` for MSVC and clang-cl, ``.dll.a`` for MinGW. Both are
written from the exports prebake reads in the DLL's bytes (a ``.def`` file), never typed by
hand, so they cannot name a function the DLL lacks: ``llvm-dlltool`` writes the MSVC short
import format, binutils' ``dlltool`` the MinGW one.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

from prebake.errors import PrebakeError
from prebake.inspect import ParseOptions, inspect

# PE machine (prebake's arch) -> dlltool's -m
MACHINES = {"x86_64": ("i386:x86-64", "x86_64-w64-mingw32-dlltool"),
            "i686": ("i386", "i686-w64-mingw32-dlltool"),
            "aarch64": ("arm64", "")}
TIMEOUT = 120


def def_text(dll: str, exports: list[str]) -> str:
    return f"LIBRARY {dll}\nEXPORTS\n" + "".join(f"    {name}\n" for name in sorted(exports))


def _run(argv: list[str], env: Mapping[str, str] | None) -> None:
    if shutil.which(argv[0], path=None if env is None else env.get("PATH")) is None:
        raise PrebakeError(f"{argv[0]} is not installed (it writes the import library)")
    proc = subprocess.run(argv, capture_output=True, text=True, errors="replace",
                          timeout=TIMEOUT, check=False, stdin=subprocess.DEVNULL,
                          env=None if env is None else dict(env))
    if proc.returncode != 0:
        raise PrebakeError(f"{' '.join(argv)} failed ({proc.returncode}): "
                           f"{(proc.stderr or proc.stdout).strip()[-300:]}")


def import_libraries(dll: Path, outputs: list[Path], *, env: Mapping[str, str] | None = None
                     ) -> list[str]:
    """Write each of ``outputs`` (``.lib`` or ``.dll.a``) for ``dll``; one line per file. The
    tools run in ``env`` (a build's environment; this process's when None)."""
    facts = inspect(dll, ParseOptions(symbols=True))
    if facts.format != "pe" or facts.kind != "shared-library":
        raise PrebakeError(f"{dll}: not a DLL (found {facts.format} {facts.kind})")
    exports = facts.symbols.exports if facts.symbols else []
    if not exports:
        raise PrebakeError(f"{dll}: exports nothing, no import library to write")
    machine, mingw_tool = MACHINES.get(facts.arch or "", ("", ""))
    if not machine:
        raise PrebakeError(f"{dll}: no import-library tool for arch {facts.arch}")
    said = []
    with tempfile.TemporaryDirectory(prefix="prebake-implib-") as tmp:
        deffile = Path(tmp) / (dll.stem + ".def")
        deffile.write_text(def_text(dll.name, exports))
        for out in outputs:
            out.parent.mkdir(parents=True, exist_ok=True)
            if out.name.endswith(".dll.a"):
                if not mingw_tool:
                    raise PrebakeError(f"{out}: no MinGW dlltool for arch {facts.arch}")
                _run([mingw_tool, "-d", str(deffile), "-D", dll.name, "-l", str(out)], env)
            elif out.suffix == ".lib":
                _run(["llvm-dlltool", "-m", machine, "-d", str(deffile), "-D", dll.name,
                      "-l", str(out)], env)
            else:
                raise PrebakeError(f"{out}: an import library is .lib (MSVC) or .dll.a (MinGW)")
            said.append(f"{out.name}: import library of {dll.name} "
                        f"({len(exports)} exports)")
    return said
