"""Host tools in a cross build: programs the build runs here (``protoc``, ``flatc``).

A cross build of onnxruntime needs a ``protoc`` that runs on the build machine and matches the
protobuf it compiles in (3.21.12 for onnxruntime 1.21): left to itself, CMake builds protoc for
the target and then tries to run it here. A recipe names such tools (``HostTool``); each is
resolved on the build's ``PATH``, asked for its version (the release must match the recipe's
demand, compared number by number like a toolchain pin) and read by the inspector: a binary
for another machine (an aarch64 ``protoc`` on an x86_64 host) is refused, never run. What it
reported enters the unit's input hash, and ``{host_tools[NAME]}`` is its absolute path. A tool
installed with prebake (``with_prebake``: the Meson family's pinned meson and ninja) is looked
for beside prebake's interpreter first, then on the build's ``PATH``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from prebake.errors import PrebakeError
from prebake.inspect import inspect
from prebake.recipes.api import HostTool
from prebake.toolchain.families import pin_matches
from prebake.toolchain.platformtools import host

TIMEOUT = 60


@dataclass(frozen=True)
class Found:
    """What one host tool is on this machine (``error``: why it cannot be used)."""

    tool: HostTool
    path: str | None
    version_line: str = ""
    version: str | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def identity(self) -> str:
        """What enters the input hash: the demand and what the tool reported (no path)."""
        if self.error is not None:
            return f"{self.tool.name} {self.tool.version}: unavailable"
        return f"{self.tool.name} {self.tool.version}: {self.version_line}"


def _host_arch() -> str | None:
    return host()[1]


def _binary_arch(path: str) -> tuple[bool, str | None]:
    """(is a binary prebake reads, its arch); a script is not a binary."""
    try:
        facts = inspect(path)
    except (PrebakeError, OSError):
        return False, None
    return True, facts.arch


def measure(tool: HostTool, path_var: str | None) -> Found:
    """Resolve ``tool`` on ``path_var`` and verify it: found, runs here, reports the release."""
    where = shutil.which(tool.name, path=str(Path(sys.executable).parent)) \
        if tool.with_prebake else None
    where = where or shutil.which(tool.name, path=path_var)
    package = f" (install {tool.package})" if tool.package else ""
    if where is None:
        return Found(tool, None, error=f"host tool {tool.name} {tool.version} is not on the "
                                       f"build's PATH{package}")
    path = str(Path(where).resolve())
    is_binary, arch = _binary_arch(path)
    here = _host_arch()
    if is_binary and arch is not None and here is not None and arch != here:
        return Found(tool, path, error=f"host tool {tool.name} ({path}) is a binary for {arch}; "
                                       f"it must run on this {here} machine, not the target")
    try:
        proc = subprocess.run([path, *tool.version_args], capture_output=True, text=True,
                              errors="replace", timeout=TIMEOUT, check=False,
                              stdin=subprocess.DEVNULL, env={"PATH": path_var or "",
                                                             "LC_ALL": "C"})
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Found(tool, path, error=f"host tool {tool.name} ({path}) does not run: "
                                       f"{type(exc).__name__}: {exc}")
    out = (proc.stdout or proc.stderr)[:4096]
    line = next((x.strip() for x in out.splitlines() if x.strip()), "")
    m = re.search(tool.version_pattern, out)
    version = m.group(1) if m else None
    if proc.returncode != 0 or version is None or not pin_matches(tool.version, version):
        said = f"reports {line!r}" if line else f"printed nothing (exit {proc.returncode})"
        return Found(tool, path, line, version,
                     error=f"host tool {tool.name}: the recipe needs {tool.version}; {path} "
                           f"{said}{package}")
    return Found(tool, path, line, version)


class HostTools:
    """Each (tool, PATH) measured once per process; safe from threads."""

    def __init__(self) -> None:
        self._cache: dict[tuple[HostTool, str], Found] = {}
        self._lock = threading.Lock()

    def find(self, tool: HostTool, env: Mapping[str, str]) -> Found:
        key = (tool, env.get("PATH", ""))
        with self._lock:
            hit = self._cache.get(key)
        if hit is None:
            hit = measure(tool, env.get("PATH"))
            with self._lock:
                self._cache[key] = hit
        return hit


HOST_TOOLS = HostTools()
