"""Real second toolchains for the tests: Debian 13's Emscripten 3.1.69 in a chroot.

The chroot is made once with ``mmdebstrap`` from the Debian mirror apt already uses (~80-105 s,
~2.4 GB) and cached under ``/var/cache/prebake-tests`` (``$PREBAKE_TRIXIE_ROOT``), which a
re-run of CI reuses. Its root holds a symlink to itself at its own host path, so a folder
under the root has the same path inside and outside: the ``emcc`` wrappers chroot into it
and run in the caller's folder without any mount. Tests put their workspaces under
``trixie_workdir()``. Only where the chroot truly cannot be made (not root, no mmdebstrap,
no mirror) do the tests that need it skip, saying why.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

TRIXIE = Path(os.environ.get("PREBAKE_TRIXIE_ROOT",
                             "/var/cache/prebake-tests/trixie-emscripten"))
TOOLS = ("emcc", "em++", "emar", "emranlib", "node")
SOURCES = Path("/etc/apt/sources.list.d/debian.sources")


def _mirror() -> str | None:
    """The Debian mirror apt uses (its deb822 ``URIs:`` of the main archive)."""
    texts = [SOURCES.read_text()] if SOURCES.is_file() else []
    legacy = Path("/etc/apt/sources.list")
    if legacy.is_file():
        texts.append(legacy.read_text())
    for text in texts:
        for m in re.finditer(r"^URIs:\s*(\S+)|^deb\s+(?:\[[^]]*\]\s+)?(\S+)", text, re.M):
            uri = m.group(1) or m.group(2)
            if "security" not in uri:
                return uri
    return None


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "the Debian 13 chroot needs root (chroot and mmdebstrap); CI runs as root"
    if shutil.which("mmdebstrap") is None:
        return "mmdebstrap is not installed (scripts/bootstrap installs it)"
    if _mirror() is None:
        return f"no Debian mirror in {SOURCES}"
    return None


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _make_chroot() -> None:
    tmp = TRIXIE.with_name(TRIXIE.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    proc = subprocess.run(
        ["mmdebstrap", "--variant=apt", "--include=emscripten,ca-certificates", "trixie",
         str(tmp), f"deb {_mirror()} trixie main"],
        capture_output=True, text=True, timeout=1200, check=False)
    if proc.returncode != 0 or not (tmp / "usr" / "bin" / "emcc").is_file():
        shutil.rmtree(tmp, ignore_errors=True)
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        pytest.skip(f"the Debian 13 chroot could not be made: {' | '.join(tail)}")
    tmp.rename(TRIXIE)


def _wrappers() -> Path:
    """``emcc``/``em++``/``emar``/``emranlib``/``node`` that run inside the chroot."""
    bin_dir = TRIXIE.with_name(TRIXIE.name + "-bin")
    bin_dir.mkdir(exist_ok=True)
    for tool in TOOLS:
        script = bin_dir / tool
        # The host's EM_CACHE/EM_CONFIG/NODE_PATH point at Debian 12's emscripten: unset them
        # (Debian 13's ships its own frozen cache and config). A folder the chroot cannot see
        # (a probe's scratch folder) runs in / : only `-v`-like calls work there.
        text = ("#!/bin/sh\n"
                f"exec chroot {TRIXIE} /usr/bin/env -u EM_CACHE -u EM_CONFIG -u NODE_PATH "
                "PATH=/usr/local/bin:/usr/bin:/bin /bin/sh -c "
                f"'{{ cd \"$0\" 2>/dev/null || cd /; }} && exec {tool} \"$@\"' "
                "\"$PWD\" \"$@\"\n")
        if not script.is_file() or script.read_text() != text:
            script.write_text(text)
            script.chmod(0o755)
    return bin_dir


def trixie_emscripten() -> Path:
    """The folder of wrappers for Debian 13's Emscripten 3.1.69 (made and cached on first use)."""
    why = _why_not()
    if why:
        pytest.skip(why)
    with _locked(TRIXIE.with_name(TRIXIE.name + ".lock")):
        if not (TRIXIE / "usr" / "bin" / "emcc").is_file():
            _make_chroot()
        link = TRIXIE / str(TRIXIE).lstrip("/")
        if not link.is_symlink():
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to("/")
        return _wrappers()


def trixie_path(bin_dir: Path) -> str:
    """A PATH that finds the chroot's Emscripten first."""
    return f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}"


@contextlib.contextmanager
def trixie_workdir(name: str) -> Iterator[Path]:
    """A fresh folder with the same path inside and outside the chroot (removed after)."""
    base = TRIXIE / "srv" / "prebake-tests"
    base.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=base))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
