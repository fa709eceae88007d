"""A toolchain environment is made only from an archive whose signatures verify: a snapshot
past its Valid-Until is accepted (the date check alone is relaxed, for the suites that say so),
an unsigned one is refused as bad input, with one line, and nothing is left behind."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests import support
from tests.servers.static_http import StaticServer

# A Release file of the shape Debian serves (any content: it is refused before it is read)
RELEASE = """Origin: Debian
Label: Debian
Suite: unstable
Codename: sid
Date: Fri, 30 Oct 2026 08:08:01 UTC
Valid-Until: Fri, 06 Nov 2026 08:08:01 UTC
Architectures: amd64
Components: main
"""


def test_an_unsigned_archive_is_refused_naming_it(tmp_path: Path) -> None:
    if os.geteuid() != 0 or shutil.which("mmdebstrap") is None:
        pytest.skip("making a Debian root needs root and mmdebstrap (CI runs as root)")
    mirror = tmp_path / "mirror"
    (mirror / "debian" / "dists" / "sid").mkdir(parents=True)
    (mirror / "debian" / "dists" / "sid" / "Release").write_text(RELEASE)
    ws = tmp_path / "ws"
    shutil.copytree(support.ROOT / "examples" / "flagship", ws,
                    ignore=shutil.ignore_patterns("releases", ".prebake"))
    toolchains = tmp_path / "toolchains"
    with StaticServer(mirror) as server:
        base = server.url
        proc = support.prebake("-C", ws, "toolchain", "install", "--platform", "wasm",
                               env={"PREBAKE_TOOLCHAINS": str(toolchains),
                                    "PREBAKE_DEBIAN_MIRROR": f"{base}/debian"})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "toolchain environment debian-sid-emscripten" in lines[0]
    assert "is not signed" in lines[0] and "does not verify against Debian's keyring" in lines[0]
    assert "Traceback" not in proc.stderr
    assert not toolchains.exists() or not any(toolchains.iterdir())


def test_the_sid_environment_is_verified_and_says_its_date_check_is_relaxed() -> None:
    """The real one (the suite's): made by mmdebstrap with signatures checked (no option that
    skips them), and its identity — which the manifest records — says the date was relaxed."""
    from prebake.toolchain.environment import environment_named, identity
    from tests import toolchains

    why = toolchains._why_not()
    if why:
        pytest.skip(why)
    env = environment_named("debian-sid-emscripten")
    assert env.check_valid_until is False
    old = os.environ.get("PREBAKE_TOOLCHAINS")
    os.environ["PREBAKE_TOOLCHAINS"] = str(toolchains.TOOLCHAINS)
    try:
        from prebake.toolchain.environment import install

        ok, message = install(env)
        assert ok, message
        line = identity("debian-sid-emscripten")
    finally:
        if old is None:
            del os.environ["PREBAKE_TOOLCHAINS"]
        else:
            os.environ["PREBAKE_TOOLCHAINS"] = old
    assert line.startswith("debian-sid-emscripten (sid; Release date check relaxed, "
                           "signatures verified): emscripten 6.0.5"), line
    root_bin = toolchains.TOOLCHAINS / f"env-{env.name}.bin"
    emcc = subprocess.run([str(root_bin / "emcc"), "--version"], capture_output=True,
                          text=True, check=False)
    assert " 6.0.5 " in emcc.stdout.splitlines()[0] + " ", emcc.stdout
