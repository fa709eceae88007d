"""One build environment per unit (``prebake.bake.buildenv.prepare``): the variables of every
command, the launcher, the CMake toolchain file's inputs, the host tools' lookup and the
guards' links all come from one value made from one allow-list (``prebake.variables``).
Real parts: the example workspace's platforms, its gcc and emcc, ccache on PATH."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from prebake.bake import Options, plan_units
from prebake.bake.buildenv import BuildEnv, prepare
from prebake.bake.layout import Layout, WorkDirs, work_dirs
from prebake.intake import load_workspace
from prebake.link.test import consumer_env
from prebake.model.workspace import Workspace
from prebake.plan.units import Unit
from prebake.toolchain import steady
from prebake.toolchain.cmakefile import for_unit
from prebake.variables import ALLOWLIST, FLAG_VARIABLES, sanitized
from tests import support

CALLER = {**{k: os.environ[k] for k in ("PATH", "HOME") if k in os.environ},
          "SDKROOT": "/opt/sdk", "CFLAGS": "-flto", "EMCC_CFLAGS": "-mrelaxed-simd",
          "GH_TOKEN": "ghp_x", "PREBAKE_COMPILER_LAUNCHER": "ccache"}


@pytest.fixture(scope="module")
def ws() -> Workspace:
    return load_workspace(support.ROOT / "examples" / "sdk")


def _prepared(ws: Workspace, platform: str, tmp_path: Path
              ) -> tuple[Unit, WorkDirs, BuildEnv]:
    unit = plan_units(ws, "core", [platform])[0]
    dirs = work_dirs(Layout(tmp_path), unit)
    return unit, dirs, prepare(ws, unit, Options(caller_env=CALLER), dirs)


def test_every_environment_of_a_unit_comes_from_the_one_allow_list(
        ws: Workspace, tmp_path: Path) -> None:
    assert {"SDKROOT", "DEVELOPER_DIR", "SYSTEMROOT"} <= set(ALLOWLIST)  # stated in the list
    unit, dirs, env = _prepared(ws, "linux-x86_64", tmp_path)
    p = unit.platform
    assert env.base == sanitized(CALLER, platform_env=p.env, unset=p.env_unset)
    commands = env.invocation(ws.recipes["vecmath"]).env
    for seen in (env.base, commands):
        assert seen["SDKROOT"] == "/opt/sdk" and seen["SOURCE_DATE_EPOCH"] == "315532800"
        assert not {"CFLAGS", "EMCC_CFLAGS", "GH_TOKEN"} & set(seen)
    assert commands["GIT_CEILING_DIRECTORIES"] == str(dirs.root)
    assert set(env.invocation(ws.recipes["vecmath"]).dropped) == {"CFLAGS", "EMCC_CFLAGS"}
    assert set(FLAG_VARIABLES) & set(CALLER) == {"CFLAGS", "EMCC_CFLAGS"}
    # the guards' links run in the unit's environment, not in this process's
    assert consumer_env(p, env.base) is env.base


def test_the_launcher_and_the_prefix_map_are_decided_once_for_commands_and_cmake(
        ws: Workspace, tmp_path: Path) -> None:
    unit, dirs, env = _prepared(ws, "linux-x86_64", tmp_path)
    ccache = shutil.which("ccache", path=CALLER["PATH"])
    assert ccache is not None and env.launcher == ccache
    assert env.prefix_map == (f"-ffile-prefix-map={dirs.root}=.",)
    cc = env.invocation(ws.recipes["vecmath"]).context.argv["cc"]
    assert cc == (ccache, "gcc", *env.prefix_map)
    made = for_unit(unit.platform, work_root=dirs.root, prefix=dirs.prefix, deps=dirs.deps,
                    env=env.base, launcher=env.launcher, flags=env.prefix_map,
                    workspace_root=ws.root)
    assert f'set(CMAKE_C_COMPILER_LAUNCHER "{ccache}")' in made.text
    assert any(env.prefix_map[0] in script for script in made.wrappers.values())


def test_emscripten_takes_the_launcher_through_its_variable(
        ws: Workspace, tmp_path: Path) -> None:
    _unit, _dirs, env = _prepared(ws, "wasm", tmp_path)
    how = env.invocation(ws.recipes["vecmath"])
    assert how.context.argv["cc"][0] == "emcc"  # emcc is a Python driver: no ccache in front
    # steady_cc in front (its code follows pointer values, prebake.toolchain.steady), the
    # compiler cache inside it
    assert how.env["EM_COMPILER_WRAPPER"] == str(steady.wrapper_path(_dirs.root))
    assert how.env[steady.LAUNCHER_VARIABLE] == env.launcher
    # the caller's EMCC_CFLAGS never reaches the build; prebake's prefix map does
    assert how.env["EMCC_CFLAGS"] == " ".join(env.prefix_map)
