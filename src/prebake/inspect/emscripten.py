"""Emscripten JS glue analysis: the facts a minified ``.wasm`` alone cannot show.

docs/binary-formats.md §3.7: JSPI leaves the wasm untouched (only the glue's
``WebAssembly.Suspending`` / ``WebAssembly.promising`` show it), and a minified legacy-EH build
renames every import, so its exception model is read from the glue's ``invoke_*`` wrappers
(``function X(a,…){var sp=save();try{…}catch(e){restore(sp);if(e!==e+0)throw e;setThrew(1,0)}}``)
and the C++ EH runtime (its ``"no exception to throw"`` message, or in older unminified
glue its ``___cxa_find_matching_catch_N``/``___resumeException`` functions). The wrappers
alone are not enough: JS-based setjmp/longjmp uses the very same ones (§3.4).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

GLUE_SUFFIXES = (".mjs", ".js")
MAX_GLUE_BYTES = 64 << 20  # a glue file is tens of KB; refuse to slurp anything absurd

_INVOKE_WRAPPER = re.compile(
    r"function\s*([\w$]+)\s*\([^()]*\)\s*\{\s*var\s+([\w$]+)\s*=\s*[\w$.]+\(\)\s*;?\s*"
    r"try\s*\{[^{}]*\}\s*catch\s*\(\s*([\w$]+)\s*\)\s*\{[^{}]*?"
    r"if\s*\(\s*\3\s*!==\s*\3\s*\+\s*0"
)
# The JS C++ EH runtime: newer glue is minified but keeps the abort message; 3.1.x glue keeps
# the library function names (verified on em++ -O1/-O3 output and the onnxruntime-web .mjs).
_CXX_EH_RUNTIME = re.compile(
    r"""["'](no exception to throw)["']|\b(___cxa_find_matching_catch_\d+|___resumeException)\b"""
)
_JSPI = re.compile(
    r"WebAssembly\s*\.\s*(Suspending|promising)\b"
    r"""|\b(suspending|promising)\s*:\s*["']first["']"""  # the pre-2024 JSPI API
)
_EMSCRIPTEN = re.compile(r"emscripten|Emscripten|EMSCRIPTEN")


@dataclass(frozen=True)
class Glue:
    """What the loader next to a module says about it."""

    path: str
    invoke_wrappers: int
    cxx_eh_runtime: tuple[str, ...]  # markers of library_exceptions.js ("no exception to throw")
    jspi_markers: tuple[str, ...]  # e.g. ("WebAssembly.Suspending", "WebAssembly.promising")
    emscripten: bool


def find_glue(wasm_path: str) -> tuple[Path | None, str | None]:
    """``X.wasm`` → ``X.mjs`` or ``X.js`` in the same folder (Emscripten's naming), if present,
    and why a glue file that is there was not read.

    ``wasm_path`` must be the module's own file (``prebake.inspect.own_file``): the glue is a
    second file found by name, so, like a thin archive's members, it is read only when it
    resolves inside the module's folder. A glue name that is a link leading out is left unread
    (the reason says so), never followed.
    """
    p = Path(wasm_path)
    if p.suffix != ".wasm":
        return None, None
    try:
        base = p.resolve().parent
    except (OSError, RuntimeError):
        return None, None
    for suffix in GLUE_SUFFIXES:
        cand = p.with_suffix(suffix)
        if not (cand.is_file() or cand.is_symlink()):
            continue
        try:
            real = cand.resolve(strict=True)
        except (OSError, RuntimeError):
            return None, f"JS glue {cand} cannot be resolved; not read"
        if not real.is_relative_to(base) or not real.is_file():
            return None, f"JS glue {cand} leads out of the module's folder; not read"
        return cand, None
    return None, None


def read_glue(path: Path) -> Glue | None:
    """Scan one glue file; ``None`` when it cannot be read or is implausibly large."""
    try:
        if path.stat().st_size > MAX_GLUE_BYTES:
            return None
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    markers: list[str] = []
    for m in _JSPI.finditer(text):
        name = f"WebAssembly.{m.group(1)}" if m.group(1) else f"{m.group(2)}: 'first'"
        if name not in markers:
            markers.append(name)
    return Glue(
        path=str(path),
        invoke_wrappers=sum(1 for _ in _INVOKE_WRAPPER.finditer(text)),
        cxx_eh_runtime=tuple(sorted({m.group(1) or m.group(2)
                                     for m in _CXX_EH_RUNTIME.finditer(text)})),
        jspi_markers=tuple(markers),
        emscripten=_EMSCRIPTEN.search(text) is not None,
    )
