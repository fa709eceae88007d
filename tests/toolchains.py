"""Real second toolchains for the tests: Debian 13's Emscripten 3.1.69 and Debian sid's
Emscripten 6.0.5 (clang 21, binaryen, Node 24: the exnref exception encoding), each in a chroot.

The chroot is prebake's own toolchain environment ``debian-13-emscripten``
(``prebake.toolchain.environment``: mmdebstrap from the Debian mirror apt already uses, ~220 s,
~3 GB), made once under ``$PREBAKE_TOOLCHAINS`` (``/var/cache/prebake-tests/toolchains``),
which a re-run of CI reuses; the flagship's tests run prebake with the same folder. Besides
prebake's own wrappers (a private mount namespace per call), its root holds a symlink to itself
at its own host path, so a folder under the root has the same path inside and outside: the
plain ``chroot`` wrappers here run in the caller's folder without any mount. Tests put their
workspaces under ``trixie_workdir()``. Only where the chroot truly cannot be made (not root,
no mmdebstrap, no mirror) do the tests that need it skip, saying why.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest

from tests import support

TOOLCHAINS = Path(os.environ.get("PREBAKE_TOOLCHAINS", "/var/cache/prebake-tests/toolchains"))
ENVIRONMENT = "debian-13-emscripten"
TRIXIE = TOOLCHAINS / f"env-{ENVIRONMENT}"
SID_ENVIRONMENT = "debian-sid-emscripten"
SID = TOOLCHAINS / f"env-{SID_ENVIRONMENT}"
TOOLS = ("emcc", "em++", "emar", "emranlib", "node")


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "the Debian 13 chroot needs root (chroot and mmdebstrap); CI runs as root"
    if shutil.which("mmdebstrap") is None:
        return "mmdebstrap is not installed (scripts/bootstrap installs it)"
    from prebake.toolchain.environment import debian_mirror

    if debian_mirror() is None:
        return "no Debian mirror in apt's sources"
    return None


def _make_chroot(environment: str = ENVIRONMENT) -> None:
    """prebake's own provisioning, into the tests' toolchains folder."""
    from prebake.toolchain.environment import environment_named, install

    old = os.environ.get("PREBAKE_TOOLCHAINS")
    os.environ["PREBAKE_TOOLCHAINS"] = str(TOOLCHAINS)
    try:
        ok, message = install(environment_named(environment))
    finally:
        if old is None:
            del os.environ["PREBAKE_TOOLCHAINS"]
        else:
            os.environ["PREBAKE_TOOLCHAINS"] = old
    if not ok:
        pytest.skip(f"the {environment} chroot could not be made: {message}")


def _wrappers(root: Path = TRIXIE, tools: tuple[str, ...] = TOOLS) -> Path:
    """``emcc``/``em++``/``emar``/``emranlib``/``node`` that run inside the chroot."""
    bin_dir = root.with_name(root.name + "-bin")
    bin_dir.mkdir(exist_ok=True)
    for tool in tools:
        script = bin_dir / tool
        # The host's EM_CACHE/EM_CONFIG/NODE_PATH point at Debian 12's emscripten: unset them
        # (Debian 13's ships its own frozen cache and config). A folder the chroot cannot see
        # (a probe's scratch folder) runs in / : only `-v`-like calls work there. prebake's
        # steady_cc (EM_COMPILER_WRAPPER) is a script of the host's interpreter, which the
        # chroot does not have: these tests are about pins and features, not about bytes from
        # two folders (tests/integration/test_reproducible.py), so the chroot's compiles run
        # without it, and so without the compiler cache it would start.
        text = ("#!/bin/sh\n"
                f"exec chroot {root} /usr/bin/env -u EM_CACHE -u EM_CONFIG -u NODE_PATH "
                "-u EM_COMPILER_WRAPPER -u PREBAKE_STEADY_ROOT -u PREBAKE_STEADY_LAUNCHER "
                "PATH=/usr/local/bin:/usr/bin:/bin /bin/sh -c "
                f"'{{ cd \"$0\" 2>/dev/null || cd /; }} && exec {tool} \"$@\"' "
                "\"$PWD\" \"$@\"\n")
        if not script.is_file() or script.read_text() != text:
            script.write_text(text)
            script.chmod(0o755)
    return bin_dir


def trixie_emscripten() -> Path:
    """The folder of wrappers for Debian 13's Emscripten 3.1.69 (made and cached on first use)."""
    return _emscripten(TRIXIE, ENVIRONMENT, TOOLS)


def sid_emscripten() -> Path:
    """The folder of wrappers for Debian sid's Emscripten 6.0.5 and its Node 24 (made and cached
    on first use, like the Debian 13 one; its llvm-21, an emscripten dependency, brings
    ``llvm-objdump-21``, which tests run with ``chroot`` directly)."""
    return _emscripten(SID, SID_ENVIRONMENT, TOOLS)


def _emscripten(root: Path, environment: str, tools: tuple[str, ...]) -> Path:
    why = _why_not()
    if why:
        pytest.skip(why)
    with support.locked(root.with_name(root.name + ".lock")):
        if not (root / "usr" / "bin" / "emcc").is_file():
            _make_chroot(environment)
        link = root / str(root).lstrip("/")
        if not link.is_symlink():
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to("/")
        return _wrappers(root, tools)


def trixie_path(bin_dir: Path) -> str:
    """A PATH that finds the chroot's Emscripten first."""
    return f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}"


@contextlib.contextmanager
def trixie_workdir(name: str, root: Path = TRIXIE) -> Iterator[Path]:
    """A fresh folder with the same path inside and outside the chroot (removed after);
    ``root=SID`` for the sid chroot."""
    base = root / "srv" / "prebake-tests"
    base.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=base))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def sid_build(name: str, sources: Mapping[str, str], commands: Sequence[Sequence[str]],
              outputs: Sequence[str]) -> Path:
    """``commands`` run by Debian sid's Emscripten 6.0.5 on ``sources`` in a folder the chroot
    sees, once: ``outputs`` are kept in the test cache, keyed by the sources and commands."""
    bin_dir = sid_emscripten()
    key = hashlib.sha256(json.dumps([dict(sources), [list(c) for c in commands]]).encode())
    out = support.CACHE / "builds" / f"sid-{name}-{key.hexdigest()[:16]}"
    with support.cache_lock(out.name):
        if (out / ".done").exists():
            return out
        env = {"PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
        with trixie_workdir(name, root=SID) as work:
            for file, text in sources.items():
                (work / file).write_text(text)
            for cmd in commands:
                support.run(cmd, work, env)
            tmp = out.with_name(out.name + f".tmp{os.getpid()}")
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True)
            for file in outputs:
                shutil.copy2(work / file, tmp / file)
            (tmp / ".done").write_text("ok\n")
            shutil.rmtree(out, ignore_errors=True)
            tmp.rename(out)
    return out
