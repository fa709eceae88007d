"""What ``verify-rebuild`` gives its rebuild: none of the caller's launcher and cache variables,
empty zig caches of its own, and Emscripten's cache empty too unless the toolchain's config
freezes it (Debian's packages), read from the real configs on this machine: Debian 12's
Emscripten, and the Debian 13 (frozen) and sid (not frozen) environments the suite installs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from prebake.contract.terms import Contract
from prebake.model.workspace import Platform, Toolchain
from prebake.rebuild.isolation import ENV_EM_CACHE, frozen_cache, isolated
from prebake.toolchain import environment
from tests import support

DEBIAN_CONFIG = Path("/usr/share/emscripten/.emscripten")
TOOLCHAINS = support.CACHE.parent / "toolchains"
CALLER = {"PATH": os.environ["PATH"], "HOME": "/root", "PREBAKE_COMPILER_LAUNCHER": "ccache",
          "CCACHE_DIR": "/c", "CCACHE_BASEDIR": "/w", "CCACHE_PREFIX": "/p.sh",
          "SCCACHE_DIR": "/s", "ZIG_GLOBAL_CACHE_DIR": "/zg", "ZIG_LOCAL_CACHE_DIR": "/zl",
          "EM_CACHE": "/e", "LANG": "C.UTF-8"}


def _platform(cc: str, env_name: str | None = None) -> Platform:
    return Platform(name="wasm", os="emscripten", arch="wasm32",
                    toolchain=Toolchain(cc=(cc,), cxx=(cc.replace("cc", "++"),),
                                        ar=("emar",), environment=env_name),
                    contract=Contract())


def _installed(name: str) -> bool:
    return (TOOLCHAINS / f"env-{name}" / "usr" / "share" / "emscripten" / ".emscripten"
            ).is_file()


def test_the_callers_launcher_and_caches_never_reach_the_rebuild(tmp_path: Path) -> None:
    gcc = Platform(name="linux-x86_64", os="linux", arch="x86_64", contract=Contract(),
                   toolchain=Toolchain(cc=("gcc",), cxx=("g++",), ar=("ar",)))
    env, iso = isolated(CALLER, tmp_path, gcc, {})
    assert {k for k in env if k.startswith(("CCACHE_", "SCCACHE_"))} == set()
    assert "PREBAKE_COMPILER_LAUNCHER" not in env and "EM_CACHE" not in env
    assert env["PATH"] == CALLER["PATH"] and env["LANG"] == "C.UTF-8"
    assert set(iso.dropped) == set(CALLER) - {"PATH", "HOME", "LANG"}
    for name in ("ZIG_GLOBAL_CACHE_DIR", "ZIG_LOCAL_CACHE_DIR"):
        assert Path(env[name]).is_relative_to(tmp_path) and Path(env[name]).is_dir()
        assert not any(Path(env[name]).iterdir())
    assert iso.to_json()["launcher"] is None
    assert "no compiler launcher" in iso.line() and "CCACHE_PREFIX" in iso.line()


@pytest.mark.skipif(not DEBIAN_CONFIG.is_file(), reason="needs Debian's emscripten")
def test_debians_frozen_cache_is_the_packages_own(tmp_path: Path) -> None:
    assert frozen_cache(DEBIAN_CONFIG)
    env, iso = isolated(CALLER, tmp_path, _platform("emcc"), {})
    assert "EM_CACHE" not in env, "the caller's (perhaps a writable copy) is not used either"
    (em,) = [c for c in iso.caches if c.name == "EM_CACHE"]
    assert not em.fresh and em.path is None and str(DEBIAN_CONFIG) in em.note


@pytest.mark.parametrize(("name", "frozen"), [("debian-13-emscripten", True),
                                              ("debian-sid-emscripten", False)])
def test_an_environments_cache_is_fresh_unless_its_config_freezes_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, frozen: bool) -> None:
    if not _installed(name):
        pytest.skip(f"needs the {name} environment (prebake toolchain install)")
    monkeypatch.setenv("PREBAKE_TOOLCHAINS", str(TOOLCHAINS))
    env, iso = isolated(CALLER, tmp_path, _platform("emcc", name), {})
    (em,) = [c for c in iso.caches if c.name == ENV_EM_CACHE]
    assert em.fresh is not frozen
    if frozen:
        assert ENV_EM_CACHE not in env
    else:
        assert Path(env[ENV_EM_CACHE]) == Path(em.path or "") and Path(em.path or "").is_dir()
        # and the environment's own Emscripten is handed it as EM_CACHE, inside the root: what
        # its wrappers run (with this checkout's interpreter: the shared wrappers are left be)
        root = environment.environment_named(name).root
        said = subprocess.run(["unshare", "--mount", "--propagation", "private", sys.executable,
                               "-m", "prebake.toolchain.enter", str(root), "python3", "-c",
                               "import os; print(os.environ['EM_CACHE'])"],
                              env=env, capture_output=True, text=True, cwd=tmp_path, timeout=60)
        assert said.returncode == 0, said.stderr
        assert said.stdout.strip() == env[ENV_EM_CACHE]
