"""Ask a platform's compiler what it is: resolved through the build's ``PATH``, never guessed.

The command is resolved as the build will run it — on the ``PATH`` of the environment the
caller passes (``prebake.variables.sanitized``: the caller's, or the platform's ``env.PATH``),
``{python}`` expanded, a zig pinned and installed by
``prebake toolchain install`` replacing ``python -m ziglang`` — and then asked for its version
and target (the family table says how). What it reports is the toolchain's measured identity:
the version line and the target count; the compiler's path and mtime do not, so two machines
with the same compiler agree and a runner image with unrelated new tools rebuilds nothing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from prebake.model.families import Family, family_of_argv, family_of_banner
from prebake.toolchain.environment import resolve as environment_resolve
from prebake.toolchain.environment import toolchains_dir

# (argv, environment) -> (exit status, stdout, stderr); tests never replace it with a fake
# compiler, but a caller may route probes (e.g. through a chroot wrapper on PATH).
Runner = Callable[[Sequence[str], Mapping[str, str]], tuple[int, str, str]]
PROBE_TIMEOUT = 120


def _run(argv: Sequence[str], env: Mapping[str, str]) -> tuple[int, str, str]:
    try:
        # In a scratch folder: `zig cc -target *-macos --version` leaves an empty a.o behind.
        with tempfile.TemporaryDirectory(prefix="prebake-probe-") as scratch:
            proc = subprocess.run(list(argv), capture_output=True, text=True, errors="replace",
                                  timeout=PROBE_TIMEOUT, env=dict(env),
                                  stdin=subprocess.DEVNULL, check=False, cwd=scratch)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return 127, "", f"{type(exc).__name__}: {exc}"
    return proc.returncode, proc.stdout[:65536], proc.stderr[:65536]


def installed_zig(version: str) -> Path | None:
    """The zig binary of ``ziglang==version`` installed by ``prebake toolchain install``."""
    exe = toolchains_dir() / f"ziglang-{version}" / "ziglang" / "zig"
    return exe if exe.is_file() and os.access(exe, os.X_OK) else None


def installed_emsdk(version: str) -> Path | None:
    """The ``emcc`` of emsdk ``version`` installed by ``prebake toolchain install``."""
    exe = toolchains_dir() / f"emsdk-{version}" / "upstream" / "emscripten" / "emcc"
    return exe if exe.is_file() and os.access(exe, os.X_OK) else None


def resolve_argv(argv: Sequence[str], family: Family | None, pinned: str | None,
                 environment: str | None = None) -> tuple[str, ...]:
    """``argv`` as the build runs it: a pinned zig (or emsdk) that ``prebake toolchain
    install`` put in the cache runs instead of whatever ``python -m ziglang`` would import
    (or ``emcc`` on ``PATH``); in a toolchain environment, the wrapper that enters it."""
    argv = tuple(argv)
    if environment:
        return environment_resolve(argv, environment)
    if family is None or not pinned or not argv:
        return argv
    if family.name == "zig" and family.module:
        exe = installed_zig(pinned)
        driver = family.driver(argv)
        if exe is not None and "-m" in driver and family.module in driver:
            return (str(exe), *argv[len(driver):])
    if family.name == "emscripten" and "/" not in argv[0]:
        emcc = installed_emsdk(pinned)
        if emcc is not None and (emcc.parent / argv[0]).is_file():
            return (str(emcc.parent / argv[0]), *argv[1:])
    return argv


def which(command: str, path: str | None) -> str | None:
    if "/" in command:
        p = Path(command)
        return str(p) if p.is_file() and os.access(p, os.X_OK) else None
    return shutil.which(command, path=path)


@dataclass(frozen=True)
class Measured:
    """What one compiler command reported about itself."""

    argv: tuple[str, ...]
    command: str | None  # argv[0] resolved through PATH (None: not found)
    family: str | None
    version: str | None
    version_line: str
    target: str
    llvm: str | None = None
    error: str | None = None

    @property
    def found(self) -> bool:
        return self.command is not None and self.error is None

    @property
    def identity(self) -> str:
        """What enters input hashes: family, version line and target (no path, no mtime)."""
        if not self.found:
            return f"unavailable ({self.error or 'not found'})"
        return f"{self.family}: {self.version_line} [target {self.target}]"

    def to_json(self) -> dict[str, object]:
        return {"argv": list(self.argv), "command": self.command, "family": self.family,
                "version": self.version, "version_line": self.version_line,
                "target": self.target, "llvm": self.llvm, "error": self.error}


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


class Prober:
    """Measures compilers, each (argv, PATH) once per process; safe to call from threads."""

    def __init__(self, run: Runner | None = None) -> None:
        self._run = run or _run
        self._cache: dict[tuple[tuple[str, ...], str], Measured] = {}
        self._lock = threading.Lock()

    def measure(self, argv: Sequence[str], env: Mapping[str, str],
                family: Family | None = None) -> Measured:
        key = (tuple(argv), env.get("PATH", ""))
        with self._lock:
            hit = self._cache.get(key)
        if hit is not None:
            return hit
        m = self._measure(tuple(argv), env, family)
        with self._lock:
            self._cache[key] = m
        return m

    def _measure(self, argv: tuple[str, ...], env: Mapping[str, str],
                 family: Family | None) -> Measured:
        if not argv:
            return Measured(argv, None, None, None, "", "", error="empty command")
        if argv[0] == sys.executable or Path(argv[0]).is_absolute():
            command = which(argv[0], None)
        else:
            command = which(argv[0], env.get("PATH"))
        fam = family or family_of_argv(argv)
        if command is None:
            return Measured(argv, None, fam.name if fam else None, None, "", "",
                            error=f"{argv[0]} not found on PATH")
        first: tuple[int, str, str] | None = None
        if fam is None:  # a plain `cc`: its --version banner says what it is
            first = self._run([*argv, "--version"], env)
            fam = family_of_banner(_first_line(first[1] or first[2]))
            if fam is None:
                return self._failed(argv, command, None, first, "--version")
        if fam.driver_version:  # zig: `zig version`, then `zig cc -v` for target and LLVM
            rc, out, err = self._run([*fam.driver(argv), *fam.version_args], env)
            if rc != 0 or not _first_line(out):
                return self._failed(argv, command, fam, (rc, out, err), fam.version_args[0])
            version_line, version = f"{fam.name} {_first_line(out)}", fam.parse_version(out)
            _rc, lout, lerr = self._run([*argv, *fam.llvm_args], env)
            target, llvm = fam.parse_target(lout + lerr), fam.parse_llvm(lout + lerr)
        else:
            if first is None or fam.version_args != ("--version",):
                first = self._run([*argv, *fam.version_args], env)
            rc, out, err = first
            version_line = _first_line(out or err)
            if rc != 0 or not version_line:
                return self._failed(argv, command, fam, first, fam.version_args[0])
            version, llvm = fam.parse_version(out or err), fam.parse_llvm(out + err)
            if fam.target_args is None:
                target = fam.parse_target(out + err)
            else:
                target = _first_line(self._run([*argv, *fam.target_args], env)[1])
        if version is None:
            return Measured(argv, command, fam.name, None, version_line, target, llvm,
                            error=f"{fam.title}: no release in {version_line[:120]!r}")
        return Measured(argv, command, fam.name, version, version_line, target, llvm)

    @staticmethod
    def _failed(argv: tuple[str, ...], command: str, fam: Family | None,
                result: tuple[int, str, str], what: str) -> Measured:
        rc, out, err = result
        line = _first_line(out or err)
        why = (f"no toolchain family recognises {line[:120]!r}" if fam is None and rc == 0
               else f"{' '.join(argv)} {what}: exit {rc} {_first_line(err)[:160]}".rstrip())
        return Measured(argv, command, fam.name if fam else None, None, line, "", error=why)


PROBER = Prober()  # one per process: each compiler is asked once per run
