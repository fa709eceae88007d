"""Emscripten's system libraries for a platform's flags, built when its environment is installed.

Emscripten builds each variant of its system libraries (libc, libc++, libc++abi, …; ``-mt`` for
threads, ``-wasmexcept`` for native exceptions, ``-debug`` for unoptimised links) the first time
a link asks for it, into the environment's own cache (``/var/cache/emscripten`` in its root).
Left to the build, the first unit in a fresh environment pays for them and writes into the
toolchain while it builds: onnxruntime 1.21.0 for wasm built 17 libraries, 43 s inside CMake's
configure checks and 55 s at its first optimised link, on 2 cores (docs/flagship.md). So
``prebake toolchain install`` links a C and a C++ program with the platform's consumer flags,
unoptimised and optimised — the links a build's configure checks and its targets make — and
later builds find every library there.
"""

from __future__ import annotations

import hashlib
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from prebake.toolchain.environment import Environment

WARM_TIMEOUT = 1800
PROGRAMS = (
    ("emcc", "c", "int main(void) { return 0; }\n"),
    ("em++", "cpp", "#include <stdexcept>\n#include <string>\n"
                    "int main(int argc, char **) {\n"
                    "  try { if (argc > 9) throw std::runtime_error(\"x\"); }\n"
                    "  catch (const std::exception &) { return 1; }\n"
                    "  return static_cast<int>(std::string(\"x\").size()) - 1;\n}\n"),
)
OPT_LEVELS = ("-O0", "-O2")


def _stamp(env: Environment, flags: Sequence[str]) -> Path:
    """Where the environment records that the libraries for ``flags`` are built (a later
    install with the same flags links nothing)."""
    key = hashlib.sha256("\0".join(flags).encode()).hexdigest()[:16]
    return env.root / "var" / "cache" / "prebake-warm" / key


def warm(env: Environment, flags: Sequence[str]) -> tuple[bool, str]:
    """Link the programs with ``flags`` at each level through the environment's wrappers:
    (True, what was done) or (False, the first link that failed and what the compiler said:
    an environment that cannot link its platform's consumer flags is not usable)."""
    stamp = _stamp(env, flags)
    if stamp.is_file():
        return True, "system libraries for the platform's flags already built"
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="prebake-em-warm-") as tmp:
        for driver, suffix, code in PROGRAMS:
            src = Path(tmp) / f"warm.{suffix}"
            src.write_text(code)
            for level in OPT_LEVELS:
                argv = [str(env.wrapper(driver)), level, *flags, str(src),
                        "-o", str(Path(tmp) / f"warm-{suffix}{level}.js")]
                why = _link(argv, tmp)
                if why:
                    return False, (f"{driver} {level} {' '.join(flags)} failed in environment "
                                   f"{env.name}: {why}")
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text("\n".join(flags) + "\n")
    return True, (f"system libraries for the platform's flags built "
                  f"({time.monotonic() - start:.0f} s)")


def _link(argv: list[str], cwd: str) -> str:
    try:
        proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, errors="replace",
                              timeout=WARM_TIMEOUT, check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{type(exc).__name__}: {exc}"
    if proc.returncode == 0:
        return ""
    lines = (proc.stderr or proc.stdout).strip().splitlines()
    # the compiler's own error line (emcc adds hints after it), else its last line
    said = next((ln for ln in lines if "error" in ln), lines[-1] if lines else "")
    return (said.strip() or f"exit {proc.returncode}")[:300]
