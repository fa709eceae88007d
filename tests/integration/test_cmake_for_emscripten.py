"""The README's CMake-for-Emscripten patterns, built for real: ``emcmake`` and
``{cmake_toolchain}`` give the same wasm library, and the contract check sees it."""

from __future__ import annotations

from pathlib import Path

import pytest

from prebake.cli import main
from prebake.errors import ConfigError
from prebake.intake import load_workspace
from tests import support

EMSCRIPTEN_CMAKE = "/usr/share/emscripten/cmake/Modules/Platform/Emscripten.cmake"
CMAKELISTS = """\
cmake_minimum_required(VERSION 3.16)
project(dot C)
add_library(dot STATIC dot.c)
install(TARGETS dot ARCHIVE DESTINATION lib)
install(FILES dot.h DESTINATION include)
"""
RECIPE = """\
from prebake.recipes import Build, LocalSource, Outputs, Recipe

CONFIGURE = ("{how} -S {{src}} -B {{build}} -DCMAKE_BUILD_TYPE=Release"
             " -DCMAKE_INSTALL_PREFIX={{prefix}}")
RECIPE = Recipe(
    name="dot",
    pin="dot",
    sources=(LocalSource("../src/dot"),),
    platforms={{"wasm": Build(commands=(
        CONFIGURE,
        "cmake --build {{build}} -j{{jobs}}",
        "cmake --install {{build}}",
    ))}},
    outputs=Outputs(libs={{"wasm": ("lib/libdot.a",)}}, headers=("include/dot.h",)),
)
"""
TOML = """\
[project]
name = "cm"
version = "1.0.0"

[pins]
dot = "1.0.0"

[platforms.wasm]
os = "emscripten"
arch = "wasm32"
env_unset = ["CFLAGS", "CXXFLAGS", "LDFLAGS", "EMCC_CFLAGS"]

[platforms.wasm.toolchain]
cc = "emcc"
cxx = "em++"
{toolchain}

[platforms.wasm.contract]
extends = "emscripten-wasm-eh"
features_required = []

[stages.core]
recipes = ["dot"]
"""


def _workspace(tmp: Path, how: str, toolchain: str) -> Path:
    ws = tmp / "ws"
    (ws / "recipes").mkdir(parents=True)
    (ws / "src" / "dot").mkdir(parents=True)
    (ws / "src" / "dot" / "CMakeLists.txt").write_text(CMAKELISTS)
    (ws / "src" / "dot" / "dot.h").write_text("float dot3(const float*, const float*);\n")
    (ws / "src" / "dot" / "dot.c").write_text(
        '#include "dot.h"\nfloat dot3(const float* a, const float* b) '
        "{ return a[0]*b[0] + a[1]*b[1] + a[2]*b[2]; }\n")
    (ws / "recipes" / "dot.py").write_text(RECIPE.format(how=how))
    (ws / "prebake.toml").write_text(TOML.format(toolchain=toolchain))
    return ws


@pytest.mark.parametrize(("how", "toolchain"), [
    ("emcmake cmake", ""),
    ("cmake -DCMAKE_TOOLCHAIN_FILE={cmake_toolchain}", ""),  # prebake's own file alone
    ("cmake -DCMAKE_TOOLCHAIN_FILE={cmake_toolchain}", f'cmake_toolchain = "{EMSCRIPTEN_CMAKE}"'),
])
def test_a_cmake_recipe_builds_for_wasm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       how: str, toolchain: str) -> None:
    for k, v in support.tool_env().items():
        monkeypatch.setenv(k, v)
    ws = _workspace(tmp_path, how, toolchain)
    assert main(["-C", str(ws), "build", "--stage", "core", "--platform", "wasm"]) == 0
    assets = sorted((ws / "releases").rglob("cm-core-1.0.0-wasm.tar.xz"))
    assert assets, list((ws / "releases").rglob("*"))
    assert main(["check", "--platform", "wasm", "-C", str(ws), str(assets[0])]) == 0


def test_a_missing_cmake_toolchain_file_is_a_config_error(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, "cmake -DCMAKE_TOOLCHAIN_FILE={cmake_toolchain}",
                    'cmake_toolchain = "cmake/extra.cmake"')
    with pytest.raises(ConfigError) as info:
        load_workspace(ws)
    [problem] = info.value.problems
    assert problem.key == "platforms.wasm.toolchain.cmake_toolchain"
    assert f"no such file: {ws / 'cmake' / 'extra.cmake'}" in problem.message
