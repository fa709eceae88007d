"""Link a tiny consumer against a library with the platform's own compiler and consumer flags.

Facts can only say what a binary *is*; the link says whether a consumer can use it. The consumer
is the recipe's snippet, or a C file that takes the address of each given symbol, or — with
neither — an empty ``main`` linked with ``--whole-archive`` (``-force_load`` on macOS; plus
``--no-gc-sections`` for wasm, whose linker would drop the unused members) so that every member
is linked and every undefined symbol surfaces, not just the ones a test knew to
look for.

The environment is the build's (a unit's guards pass it), else this process's through the
one allow-list plus the platform's ``env`` (never the caller's whole environment: a stray
``CFLAGS=-flto`` must not leak into a guard). On failure the
linker's own lines are kept verbatim; ``errors`` holds the lines that name an error or an
undefined symbol (Emscripten 3.1.6 prints those from its JS compiler step, not wasm-ld).
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from prebake.errors import FormatError, PrebakeError
from prebake.inspect import ParseOptions, inspect
from prebake.variables import sanitized

ERROR_LINE = re.compile(r"\berror\b|undefined (symbol|reference)\b", re.IGNORECASE)
MAX_ERRORS = 40
SHARED_SUFFIX = re.compile(r"\.(so(\.\d+)*|dylib|dll)$")


class _Toolchain(Protocol):
    @property
    def cc(self) -> tuple[str, ...]: ...
    @property
    def cxx(self) -> tuple[str, ...]: ...


class _LinkTest(Protocol):
    @property
    def flags(self) -> tuple[str, ...]: ...
    @property
    def run(self) -> tuple[str, ...] | None: ...


class LinkPlatform(Protocol):
    """What link_test needs of ``prebake.model.workspace.Platform``."""

    @property
    def name(self) -> str: ...
    @property
    def os(self) -> str: ...
    @property
    def toolchain(self) -> _Toolchain: ...
    @property
    def link_test(self) -> _LinkTest: ...
    @property
    def env(self) -> Mapping[str, str]: ...
    @property
    def env_unset(self) -> tuple[str, ...]: ...


@dataclass
class LinkTestResult:
    """``ok`` when the consumer compiled, linked (and ran, if the platform has a runner)."""

    ok: bool
    commands: list[list[str]]
    output: str
    errors: list[str] = field(default_factory=list)
    stage: str = "link"  # compile | link | run: where it stopped (or "run"/"link" when ok)
    workdir: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "stage": self.stage,
            "commands": self.commands,
            "errors": self.errors,
            "output": self.output,
            "workdir": self.workdir,
        }


def error_lines(output: str) -> list[str]:
    """The lines naming an error or an undefined symbol, verbatim, first ones first, no repeats."""
    seen: set[str] = set()
    out: list[str] = []
    for line in output.splitlines():
        s = line.rstrip()
        if s and ERROR_LINE.search(s) and s not in seen:
            seen.add(s)
            out.append(s)
            if len(out) >= MAX_ERRORS:
                break
    return out


def asm_name(sym: str, os_name: str) -> str:
    """The C-level name for an asm label: Mach-O binary names carry one extra ``_``."""
    if os_name == "macos" and sym.startswith("_") and (sym.startswith("__Z") or sym[1:2] != "Z"):
        return sym[1:]
    return sym


def symbols_consumer(symbols: Sequence[str], os_name: str) -> str:
    """C source that takes the address of each symbol, so the linker must resolve all of them."""
    if not symbols:
        return "int main(void) { return 0; }\n"
    lines = [
        "/* written by prebake link-test: references each symbol under test */",
        "#include <stdint.h>",
        "#define PREBAKE_STR2(x) #x",
        "#define PREBAKE_STR(x) PREBAKE_STR2(x)",
        "#define PREBAKE_PFX PREBAKE_STR(__USER_LABEL_PREFIX__)",
    ]
    for i, sym in enumerate(symbols):
        if not re.fullmatch(r"[A-Za-z0-9_.$@?]+", sym):
            raise PrebakeError(f"link-test: {sym!r} is not a symbol name")
        name = asm_name(sym, os_name)
        lines.append(f'extern void prebake_sym_{i}(void) __asm__(PREBAKE_PFX "{name}");')
    lines.append("int main(void) {\n  volatile uintptr_t acc = 0;")
    lines += [f"  acc += (uintptr_t)&prebake_sym_{i};" for i in range(len(symbols))]
    lines.append("  return acc == 1;\n}")
    return "\n".join(lines) + "\n"


def consumer_env(platform: LinkPlatform, env: Mapping[str, str] | None) -> Mapping[str, str]:
    """The environment a consumer's compile and link run in: the build's (``env``, what a
    unit's guards pass), else this process's through the one allow-list
    (``prebake.variables.sanitized``) with the platform's ``env`` and ``env_unset``."""
    if env is not None:
        return env
    return sanitized(None, platform_env=platform.env, unset=platform.env_unset)


def _library_args(library: Path, os_name: str, whole: bool) -> list[str]:
    lib = str(library)
    if SHARED_SUFFIX.search(library.name):
        if os_name in ("windows", "emscripten"):
            return [lib]
        return [lib, f"-Wl,-rpath,{library.parent}"]
    if not whole:
        return [lib]
    if os_name == "macos":
        return [f"-Wl,-force_load,{lib}"]
    whole_args = ["-Wl,--whole-archive", lib, "-Wl,--no-whole-archive"]
    if os_name in ("emscripten", "wasi"):
        # emcc links with --gc-sections: unreferenced members' imports would vanish unchecked
        whole_args.append("-Wl,--no-gc-sections")
    return whole_args


def _is_cxx(library: Path) -> bool:
    """Whether the library needs the C++ runtime; when it cannot be read, assume it does."""
    try:
        facts = inspect(library, ParseOptions(symbols=True))
    except PrebakeError:
        return True
    for f in facts.walk():
        if f.abi.cxx_stdlib not in (None, "none") or f.abi.eh not in (None, "none"):
            return True
        sy = f.symbols
        names = (*sy.undefined, *sy.defined) if sy is not None else ()
        if any(n.startswith(("_Z", "__Z", "?")) for n in names):
            return True
    return False


def _output_name(os_name: str) -> str:
    return {"emscripten": "consumer.js", "windows": "consumer.exe", "wasi": "consumer.wasm"}.get(
        os_name, "consumer"
    )


def run_linker(cmd: list[str], cwd: Path, env: Mapping[str, str], timeout: float
               ) -> tuple[int, str]:
    """A compile or link command's exit status and output (stderr folded in), for the link
    test and the whole-archive link alike."""
    try:
        proc = subprocess.run(cmd, cwd=cwd, env=dict(env), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, errors="replace",
                              timeout=timeout, check=False)
    except FileNotFoundError:
        return 127, f"{cmd[0]}: command not found"
    except subprocess.TimeoutExpired:
        return 124, f"{' '.join(cmd)}: timed out after {timeout:.0f} s"
    return proc.returncode, proc.stdout


def link_test(library: Path, platform: LinkPlatform, *, include_dirs: Sequence[Path] = (),
              snippet: str | None = None, symbols: Sequence[str] = (),
              workdir: Path | None = None, lang: str | None = None,
              env: Mapping[str, str] | None = None, timeout: float = 900,
              flags: Sequence[str] = (), more: Sequence[Path] = ()) -> LinkTestResult:
    """Compile and link a consumer of ``library`` for ``platform``; see the module docstring.

    ``flags`` come after the platform's ``link_test.flags`` (a recipe snippet's own flags);
    ``env`` is the whole environment the compiler runs in (``consumer_env``); ``more`` are
    libraries linked after it (a recipe's other shared libraries, in link order: FFmpeg's
    consumer calls libavutil as well as libavformat)."""
    libraries = [Path(lib).resolve() for lib in (library, *more)]
    for lib in libraries:
        if not lib.is_file():
            raise PrebakeError(f"{lib}: no such library")
        _require_library(lib)
    if not platform.toolchain.cc or not platform.toolchain.cxx:
        raise PrebakeError(f"platform {platform.name}: no toolchain.cc/cxx to link a consumer with")
    if workdir is None:
        with tempfile.TemporaryDirectory(prefix="prebake-link-test-") as tmp:
            result = _link_test(libraries, platform, include_dirs, snippet, symbols, Path(tmp),
                                lang, env, timeout, flags)
            result.workdir = None
            return result
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    return _link_test(libraries, platform, include_dirs, snippet, symbols, workdir, lang, env,
                      timeout, flags)


LINKABLE_KINDS = ("static-library", "shared-library", "import-library", "object")


def _require_library(library: Path) -> None:
    """Bad input is exit 2 with the reason, not a linker failure dressed up as a check result."""
    if library.name.endswith((".tar.xz", ".tar.gz", ".tgz", ".zip")):
        raise PrebakeError(f"{library}: a release asset, not a library: unpack it (prebake fetch "
                           "… --into DIR) and link-test DIR/lib/<library>")
    try:
        kind = inspect(library).kind
    except FormatError as exc:
        raise PrebakeError(f"{exc} (link-test takes a library or an object)") from None
    if kind not in LINKABLE_KINDS:
        raise PrebakeError(f"{library}: {kind or 'a binary of unknown kind'}, not a library "
                           "a consumer links")


def _link_test(libraries: Sequence[Path], platform: LinkPlatform, include_dirs: Sequence[Path],
               snippet: str | None, symbols: Sequence[str], workdir: Path, lang: str | None,
               env: Mapping[str, str] | None, timeout: float,
               extra_flags: Sequence[str] = ()) -> LinkTestResult:
    os_name = platform.os
    if snippet is not None:
        lang = lang or "c++"
        source = snippet if snippet.endswith("\n") else snippet + "\n"
    else:
        lang = "c"
        source = symbols_consumer(symbols, os_name)
    src = workdir / ("consumer.cpp" if lang in ("c++", "cxx", "cpp") else "consumer.c")
    src.write_text(source)
    compiler = platform.toolchain.cxx if src.suffix == ".cpp" else platform.toolchain.cc
    # link with the C++ driver only when something needs the C++ runtime: it is what a C
    # consumer would do, and zig builds libc++ for a target on first use (minutes)
    cxx = src.suffix == ".cpp" or any(_is_cxx(lib) for lib in libraries)
    linker = platform.toolchain.cxx if cxx else compiler
    flags = [*platform.link_test.flags, *extra_flags]
    incs = [f"-I{Path(d).resolve()}" for d in include_dirs if Path(d).is_dir()]
    obj = "consumer.obj" if os_name == "windows" else "consumer.o"
    out = _output_name(os_name)
    whole = snippet is None and not symbols
    commands = [
        [*compiler, *flags, *incs, "-c", src.name, "-o", obj],
        [*linker, *flags, obj,
         *(a for lib in libraries for a in _library_args(lib, os_name, whole)), "-o", out],
    ]
    steps = [("compile", commands[0]), ("link", commands[1])]
    runner = platform.link_test.run
    if runner:
        steps.append(("run", [*runner, f"./{out}"]))
    run_env = consumer_env(platform, env)
    log: list[str] = []
    ran: list[list[str]] = []
    for stage, cmd in steps:
        ran.append(cmd)
        rc, text = run_linker(cmd, workdir, run_env, timeout)
        log.append(text)
        if rc != 0:
            output = "".join(log)
            # a failed run is judged by its own output; compiler errors by everything so far
            errors = (error_lines(text) or [f"{' '.join(cmd)} exited with status {rc}"]
                      if stage == "run" else
                      error_lines(output) or [f"{cmd[0]} exited with status {rc}"])
            return LinkTestResult(False, ran, output, errors, stage, str(workdir))
    return LinkTestResult(True, ran, "".join(log), [], steps[-1][0], str(workdir))
