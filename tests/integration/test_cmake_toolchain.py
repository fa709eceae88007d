"""The CMake toolchain file prebake writes per platform, judged by cross-building a real CMake
project (tests/data/cmake-cross: a library, an executable, and a package found in the unit's
prefix) for linux-aarch64 (zig, glibc 2.28) and windows-x86_64 (mingw-w64), plus the host.

Judged by ``prebake inspect`` facts of the shipped executable (arch, glibc floor, PE machine)
and by ``file``; the aarch64 program also runs under ``qemu-aarch64`` when Debian's qemu-user is
installed. The build is cached under $PREBAKE_TEST_CACHE by the workspace text and prebake's
code, so a session builds it once.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest

from tests import support

pytestmark = pytest.mark.skipif(
    shutil.which("cmake") is None or shutil.which("x86_64-w64-mingw32-gcc") is None
    or shutil.which("emcc") is None, reason="needs cmake, mingw-w64 and emcc")

DATA = support.ROOT / "tests" / "data" / "cmake-cross"
CONFIGURE = ("cmake -S {src} -B {build} -DCMAKE_TOOLCHAIN_FILE={cmake_toolchain}"
             " -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX={prefix}")
RECIPE = '''\
from prebake.recipes import Build, LocalSource, Outputs, Recipe

RECIPE = Recipe(
    name="NAME",
    pin="demo",
    sources=(LocalSource("NAME-src"),),
    platforms={"*": Build(commands=("CONFIGURE", "cmake --build {build} -j {jobs}",
                                    "cmake --install {build}"),
                          cmake_cache="{build}/CMakeCache.txt", record=RECORD)},
    outputs=Outputs(libs={"*": ("lib/libLIB.a",)}, headers=("include/HEADER",)),
    kind={"*": "static"},
    deps=DEPS,
)
'''

WORKSPACE = support.workspace_text("cmake-cross")


def _files() -> dict[str, str]:
    files = {"prebake.toml": WORKSPACE}
    for name, lib, header in (("base", "base", "base.h"), ("app", "greet", "greet.h")):
        files[f"recipes/{name}.py"] = (RECIPE.replace("CONFIGURE", CONFIGURE)
                                       .replace("NAME", name).replace("LIB", lib)
                                       .replace("HEADER", header)
                                       .replace("DEPS", '("base",)' if name == "app" else "()")
                                       .replace("RECORD", '("CMAKE_BUILD_TYPE", "BASE_WITH_DOT")'
                                                if name == "base" else "()"))
        for p in sorted((DATA / name).iterdir()):
            files[f"recipes/{name}-src/{p.name}"] = p.read_text()
    return files


@pytest.fixture(scope="module")
def built() -> tuple[Path, int, dict[str, Any]]:
    # its own zig cache: a runtime an earlier link built inside some build folder would stay
    # cached with that folder in its debug info (prebake.toolchain.zigwarm)
    env = support.tool_env({"ZIG_GLOBAL_CACHE_DIR": str(support.CACHE / "zig-cmake-cross")})
    return support.cached_prebake_build("cmake-cross", _files(),
                                        ["build", "--stage", "core", "-j", "2"], env=env)


def _unpack(ws: Path, platform: str, dest: Path) -> Path:
    asset = next((ws / "releases").rglob(f"cross-core-1.0.0-{platform}.tar.xz"))
    out = dest / platform
    with tarfile.open(asset) as tf:
        tf.extractall(out, filter="data")
    return out


def _inspect(path: Path) -> dict[str, Any]:
    proc = support.prebake("inspect", path, "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    return data[0] if isinstance(data, list) else data["results"][0]


def _file(path: Path) -> str:
    return subprocess.run(["file", "-b", str(path)], capture_output=True, text=True,
                          check=True).stdout


def test_every_platform_builds_through_the_generated_toolchain_file(built: Any) -> None:
    _ws, rc, data = built
    states = {u["unit"]: u["state"] for u in data["units"]}
    assert rc == 0, json.dumps(data, indent=1)[:4000]
    assert states == {"core/linux-x86_64": "built", "core/linux-aarch64": "built",
                      "core/windows-x86_64": "built", "core/wasm": "built"}


def test_linux_aarch64_executable_is_aarch64_with_glibc_2_28(built: Any, tmp_path: Path
                                                              ) -> None:
    ws, _rc, _data = built
    root = _unpack(ws, "linux-aarch64", tmp_path)
    hello = root / "bin" / "hello"
    facts = _inspect(hello)
    assert facts["format"] == "elf" and facts["kind"] == "executable"
    assert facts["arch"] == "aarch64"
    glibc = facts["abi"]["glibc_max"]
    assert glibc is not None and tuple(map(int, glibc.split("."))) <= (2, 28)
    assert "ARM aarch64" in _file(hello)
    lib = _inspect(root / "lib" / "libgreet.a")
    assert lib["arch"] == "aarch64"
    qemu = shutil.which("qemu-aarch64")
    if qemu is not None and Path("/usr/aarch64-linux-gnu/lib").is_dir():
        run = subprocess.run([qemu, "-L", "/usr/aarch64-linux-gnu", str(hello)],
                             capture_output=True, text=True, timeout=60, check=False)
        assert run.stdout == "hello from aarch64: 42\n", run.stderr


def test_gcc_march_spelling_reaches_zig_and_the_kernel_runs(built: Any, tmp_path: Path
                                                           ) -> None:
    """base's dot.c is compiled with ``-march=armv8.2-a+dotprod`` only (it fails to compile
    without the feature); zig reads -march as -mcpu, so the wrapper of the generated file must
    say it in zig's words. Under qemu the program's 42 comes from the dot-product kernel."""
    ws, _rc, _data = built
    root = _unpack(ws, "linux-aarch64", tmp_path)
    members = [m["details"]["member"] for m in _inspect(root / "lib" / "libbase.a")["members"]]
    assert any(n.startswith("dot.c") for n in members), members
    log = (ws / ".prebake" / "logs" / "core--linux-aarch64.log").read_text()
    assert "-march=armv*) a=-mcpu=generic+" in log  # the wrapper, as the toolchain file names it
    host = _unpack(ws, "linux-x86_64", tmp_path)
    host_members = [m["details"]["member"]
                    for m in _inspect(host / "lib" / "libbase.a")["members"]]
    assert not any(n.startswith("dot.c") for n in host_members)  # an aarch64 kernel only


def test_manifest_records_what_cmake_configured(built: Any) -> None:
    """``Build.record``: the entries of the build's own CMakeCache.txt, in the recipe entry."""
    ws, _rc, _data = built
    sidecar = next((ws / "releases").rglob("cross-core-1.0.0-linux-aarch64.tar.xz.json"))
    recipes = {r["name"]: r for r in json.loads(sidecar.read_text())["recipes"]}
    assert recipes["base"]["build_settings"] == {"CMAKE_BUILD_TYPE": "Release",
                                                 "BASE_WITH_DOT": "ON"}
    assert "build_settings" not in recipes["app"]


def test_windows_executable_is_a_pe_for_x86_64(built: Any, tmp_path: Path) -> None:
    ws, _rc, _data = built
    root = _unpack(ws, "windows-x86_64", tmp_path)
    hello = root / "bin" / "hello.exe"
    facts = _inspect(hello)
    assert (facts["format"], facts["arch"], facts["os"]) == ("pe", "x86_64", "windows")
    assert "PE32+ executable" in _file(hello) and "x86-64" in _file(hello)


def test_emscripten_through_the_same_placeholder(built: Any, tmp_path: Path) -> None:
    ws, _rc, _data = built
    lib = _inspect(_unpack(ws, "wasm", tmp_path) / "lib" / "libgreet.a")
    assert lib["arch"] == "wasm32"


def test_host_build_runs(built: Any, tmp_path: Path) -> None:
    ws, _rc, _data = built
    hello = _unpack(ws, "linux-x86_64", tmp_path) / "bin" / "hello"
    run = subprocess.run([str(hello)], capture_output=True, text=True, check=False)
    assert run.stdout == "hello from x86_64: 42\n"


def test_the_log_holds_the_cross_file_and_the_hash_follows_it(built: Any) -> None:
    """The unit's input hash names the toolchain file; the plan of a workspace whose platform
    changes only its os target would differ (shown on the aarch64 triple)."""
    ws, _rc, data = built
    unit = next(u for u in data["units"] if u["unit"] == "core/linux-aarch64")
    log = Path(unit["log"]).read_text() if unit.get("log") and Path(unit["log"]).is_file() \
        else ""
    if log:
        assert "set(CMAKE_SYSTEM_NAME Linux)" in log and "CMAKE_SYSTEM_PROCESSOR aarch64" in log
    plan = support.prebake("-C", ws, "plan", "--explain", "core/linux-aarch64",
                           env=support.tool_env())
    assert plan.returncode == 0, plan.stderr
    assert "cmake-toolchain" in plan.stdout
