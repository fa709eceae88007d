"""Windows programs run under Wine: a consumer built for ``windows-x86_64`` against an asset,
run on this Linux machine as its users run it on Windows (the DLLs loaded by Windows' rules,
each import resolved at start).

One Wine prefix (its ``C:`` drive and registry: ~700 MB, 6–10 s to make) serves many runs: it
is made once, under a lock, by ``wineboot --init`` (so a program's own output carries none of
Wine's set-up lines) and stamped with the Wine that made it; a later run starts in 0.1–1 s.
A program's exit code passes through. The folders given as ``dll_dirs`` go on ``WINEPATH``
(Wine takes Unix paths there), where the loader looks after the program's own folder. Wine's
messages are off except the loader's errors (``WINEDEBUG=-all,err+module``): a DLL that cannot
be found is then named (:attr:`WineRun.missing`) instead of a bare exit code 53.

``python -m prebake.link.wine --prefix DIR [--dll-dir DIR]... PROGRAM [ARG]...`` is the same
for scripts (``scripts/main-job``). Wine is Debian's ``wine64`` (``apt-get install wine64
wine``; ``scripts/bootstrap`` installs it); docs/toolchains.md records what runs under it.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from prebake.errors import PrebakeError
from prebake.variables import sanitized

# /usr/bin/wine wraps this one and prints a "wine32 is missing" hint unless WINEDEBUG says -all
WINE64 = Path("/usr/lib/wine/wine64")
WINEDEBUG = "-all,err+module"
# no Mono or Gecko: a console program needs neither, and their absence would ask at set-up
NO_INSTALLERS = "mscoree,mshtml="
STAMP = ".prebake-wine"
MISSING = re.compile(r"err:module:import_dll Library (\S+) \(which is needed by (.+?)\) not found")
SETUP_TIMEOUT = 300
# the variables a run keeps from the caller: no display (console programs), nothing else leaks


@dataclass(frozen=True)
class WineRun:
    """One program's run: its exit code and output, as Wine passed them on."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def missing(self) -> list[str]:
        """The DLLs the loader could not find (``foo.dll (needed by bar.exe)``), in order."""
        out = []
        for dll, by in MISSING.findall(self.stderr):
            who = by.strip('L"').rsplit("\\", 1)[-1]
            if f"{dll} (needed by {who})" not in out:
                out.append(f"{dll} (needed by {who})")
        return out

    def failure(self) -> str:
        """One line saying why the run failed (empty when it did not)."""
        if self.returncode == 0:
            return ""
        program = Path(self.argv[1]).name if len(self.argv) > 1 else "the program"
        if self.missing:
            return (f"{program}: Windows could not load it: not found: "
                    f"{', '.join(self.missing)} (put each DLL's folder on the DLL path)")
        return f"{program} exited with status {self.returncode} under Wine"


def wine() -> str:
    """The Wine loader to start programs with."""
    if WINE64.is_file() and os.access(WINE64, os.X_OK):
        return str(WINE64)
    found = shutil.which("wine64") or shutil.which("wine")
    if found is None:
        raise PrebakeError("Wine is not installed: apt-get install wine64 wine (Debian's; "
                           "scripts/bootstrap installs it)")
    return found


def _version(loader: str) -> str:
    proc = subprocess.run([loader, "--version"], capture_output=True, text=True, check=False,
                          timeout=60, env=_env({}, None, ()))
    return proc.stdout.strip() or f"unknown ({proc.returncode})"


def _env(extra: Mapping[str, str], prefix: Path | None, dll_dirs: Sequence[Path]
         ) -> dict[str, str]:
    # the one allow-list every program prebake starts inherits (no flags, no secrets)
    # and a UTF-8 locale, not the builds' fixed C: Wine maps Unix file names to Windows ones
    # through the locale's charset, and under C a path it cannot spell in ASCII is mangled
    env = sanitized(None, extra={"WINEDEBUG": WINEDEBUG, "WINEDLLOVERRIDES": NO_INSTALLERS,
                                 "LC_ALL": "C.UTF-8"})
    if prefix is not None:
        env["WINEPREFIX"] = str(prefix)
    if dll_dirs:
        env["WINEPATH"] = ";".join(str(Path(d).resolve()) for d in dll_dirs)
    env.update(extra)
    return env


def ensure_prefix(prefix: Path) -> Path:
    """``prefix`` made (or brought up to this Wine) once, whoever asks first; a prefix left
    half-made by an interrupted set-up is made again."""
    prefix = Path(prefix).resolve()
    loader = wine()
    version = _version(loader)
    stamp = prefix / STAMP
    prefix.parent.mkdir(parents=True, exist_ok=True)
    with open(prefix.parent / f".{prefix.name}.lock", "w") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            if stamp.is_file() and stamp.read_text() == version:
                return prefix
            if prefix.exists() and not stamp.is_file():
                shutil.rmtree(prefix)  # an interrupted set-up: Wine would not finish it
            env = _env({}, prefix, ())
            steps = [[loader, "wineboot", "--init" if not prefix.exists() else "--update"],
                     [str(Path(loader).with_name("wineserver")), "--wait"]]
            for argv in steps:
                proc = subprocess.run(argv, capture_output=True, text=True, errors="replace",
                                      check=False, timeout=SETUP_TIMEOUT, env=env,
                                      stdin=subprocess.DEVNULL)
                if proc.returncode != 0:
                    said = (proc.stderr or proc.stdout).strip().splitlines()
                    raise PrebakeError(f"Wine could not make its prefix {prefix}: "
                                       f"{' '.join(argv)} exited with status "
                                       f"{proc.returncode}: {said[-1] if said else ''}")
            stamp.write_text(version)
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
    return prefix


def run(program: Path, args: Sequence[str] = (), *, prefix: Path,
        dll_dirs: Sequence[Path] = (), cwd: Path | None = None, timeout: float = 600,
        env: Mapping[str, str] | None = None) -> WineRun:
    """Run ``program`` (a Windows ``.exe``) with ``args`` under Wine in ``prefix`` (made when
    needed), the DLLs of ``dll_dirs`` on its path; its output is captured."""
    program = Path(program)
    if not program.is_file():
        raise PrebakeError(f"{program}: no such program")
    ensure_prefix(prefix)
    argv = (wine(), str(program.resolve()), *args)
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, errors="replace",
                              check=False, timeout=timeout, cwd=cwd,
                              env=_env(env or {}, Path(prefix).resolve(), dll_dirs),
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise PrebakeError(f"{program.name}: still running under Wine after {timeout:.0f} s"
                           ) from None
    return WineRun(argv, proc.returncode, proc.stdout, proc.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """The command line: the program's output and exit code as its own, one more line naming
    the DLLs that could not be found."""
    p = argparse.ArgumentParser(prog="python -m prebake.link.wine",
                                description="run a Windows program under Wine")
    p.add_argument("--prefix", required=True, type=Path,
                   help="the Wine prefix (made on first use, then reused)")
    p.add_argument("--dll-dir", action="append", default=[], type=Path,
                   help="a folder of DLLs the program loads (repeatable)")
    p.add_argument("program", type=Path)
    p.add_argument("args", nargs=argparse.REMAINDER)
    a = p.parse_args(argv)
    try:
        result = run(a.program, a.args, prefix=a.prefix, dll_dirs=a.dll_dir)
    except PrebakeError as exc:
        sys.stderr.write(f"prebake.link.wine: {exc}\n")
        return 2
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    if result.returncode != 0:
        sys.stderr.write(f"prebake.link.wine: {result.failure()}\n")
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
