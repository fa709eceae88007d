"""A real upstream CMake project through prebake: zstd from Debian's source tarballs, built
with its own ``build/cmake`` (which installs ``libzstd.pc`` and ``zstdConfig.cmake`` naming the
absolute install prefix, and only the target ``zstd::libzstd_static``).

* the asset is relocatable: its ``.pc`` is ``${pcfiledir}``-relative, no packaged file names a
  build folder, and the same workspace in two folders builds byte-identical assets (15.4);
* upstream's CMake package is kept and ``zstd::zstd`` wraps ``zstd::libzstd_static``:
  ``find_package(zstd 1.5.4)`` works, a newer request is refused, the consumer links (15.5);
* the pin bumped to 1.5.7 over the 1.5.4 source fails the unit naming the evidence (15.6);
* an ``emcmake cmake`` consumer fetches the wasm asset with ``prebake_fetch`` and finds it
  under Emscripten's ``CMAKE_FIND_ROOT_PATH_MODE_PACKAGE=ONLY`` (15.9).

Each prebake build is cached under $PREBAKE_TEST_CACHE by the workspace text, the tarball and
prebake's own code, so a session builds each one once.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest

from tests import support

pytestmark = pytest.mark.skipif(shutil.which("cmake") is None or shutil.which("emcmake") is None,
                                reason="needs cmake and emcmake")

ZSTD = {"1.5.4": "libz/libzstd/libzstd_1.5.4+dfsg2.orig.tar.xz",
        "1.5.7": "libz/libzstd/libzstd_1.5.7+dfsg.orig.tar.xz"}

RECIPE = '''\
"""zstd from Debian's .orig tarball, built and installed by its own CMake (build/cmake)."""

from prebake.recipes import Build, Outputs, Recipe, Snippet, UrlSource, VersionCheck

CONFIGURE = (" -S {src}/build/cmake -B {build} -DCMAKE_BUILD_TYPE=Release"
             " -DCMAKE_INSTALL_PREFIX={prefix} -DCMAKE_INSTALL_LIBDIR=lib"
             " -DZSTD_BUILD_SHARED=OFF -DZSTD_BUILD_PROGRAMS=OFF -DZSTD_BUILD_TESTS=OFF"
             " -DZSTD_LEGACY_SUPPORT=OFF -DZSTD_MULTITHREAD_SUPPORT=OFF")
BUILD = ("cmake --build {build} -j {jobs}", "cmake --install {build}")

RECIPE = Recipe(
    name="zstd",
    pin="zstd",
    sources=(UrlSource("URL", sha256="SHA256"),),
    platforms={
        "linux-x86_64": Build(commands=("cmake" + CONFIGURE, *BUILD), env={"CC": "{cc}"}),
        "wasm": Build(commands=("emcmake cmake" + CONFIGURE, *BUILD)),
    },
    outputs=Outputs(libs={"*": ("lib/libzstd.a",)}, headers=("include/zstd.h",),
                    cmake_target="zstd::libzstd_static"),
    kind={"*": "static"},
    version_check=VersionCheck("include/zstd.h", ("ZSTD_VERSION_MAJOR", "ZSTD_VERSION_MINOR",
                                                  "ZSTD_VERSION_RELEASE")),
    link_test=Snippet(code="#include <zstd.h>\\nint main(void) { return ZSTD_versionNumber() "
                           "== ZSTD_VERSION_NUMBER ? 0 : 1; }\\n", lang="c"),
)
'''

WASM_PLATFORM = """
[platforms.wasm]
os = "emscripten"
arch = "wasm32"
env_unset = ["CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "EMCC_CFLAGS"]

[platforms.wasm.toolchain]
cc = "emcc"
cxx = "em++"
ar = "emar"

[platforms.wasm.contract]
lto = "none"

[platforms.wasm.link_test]
flags = ["-sERROR_ON_UNDEFINED_SYMBOLS=1"]
"""
WORKSPACE = support.gcc_workspace("zstd-relocate", 'zstd = "PIN"', "deps", '["zstd"]',
                                  more=WASM_PLATFORM)

MAIN_C = """\
#include <stdio.h>
#include <string.h>
#include <zstd.h>
int main(void) {
  const char in[] = "prebake prebake prebake prebake prebake";
  char packed[256], out[256];
  size_t n = ZSTD_compress(packed, sizeof packed, in, sizeof in, 3);
  if (ZSTD_isError(n)) return 1;
  size_t m = ZSTD_decompress(out, sizeof out, packed, n);
  if (ZSTD_isError(m) || m != sizeof in || memcmp(in, out, m) != 0) return 2;
  printf("zstd %s round trip ok\\n", ZSTD_versionString());
  return 0;
}
"""

CONSUMER = """\
cmake_minimum_required(VERSION 3.16)
project(consumer C)
find_package(zstd ${WANT} CONFIG REQUIRED)
add_executable(app main.c)
target_link_libraries(app PRIVATE zstd::zstd)
"""

EMCMAKE_CONSUMER = """\
cmake_minimum_required(VERSION 3.16)
project(consumer C)
list(APPEND CMAKE_MODULE_PATH "${PREBAKE_MODULE_DIR}")
include(Prebake)
prebake_fetch(zstd 1.5.7 wasm STORE "${ZSTD_STORE}")
find_package(zstd 1.5.7 CONFIG REQUIRED)
add_executable(app main.c)
target_link_libraries(app PRIVATE zstd::zstd)
"""

SOURCE_CACHE = support.CACHE / "prebake-sources"


def _files(pin: str, source: str) -> dict[str, str]:
    pool = ZSTD[source]
    support.seed_source_cache(SOURCE_CACHE, pool)
    recipe = (RECIPE.replace("URL", support.debian_ref(pool))
              .replace("SHA256", support.DEBIAN_ORIG[pool]))
    return {"recipes/zstd.py": recipe, "prebake.toml": WORKSPACE.replace("PIN", pin)}


def built(tag: str, pin: str, source: str, platform: str) -> tuple[Path, int, dict[str, Any]]:
    """``prebake build --stage deps --platform P`` of a zstd workspace in its own folder of the
    test cache (``tag`` names it; a ``-deep`` tag builds two folders further down)."""
    return support.cached_prebake_build(
        f"zstd-{tag}", _files(pin, source),
        ["build", "--stage", "deps", "--platform", platform],
        env={"PREBAKE_CACHE": str(SOURCE_CACHE)},
        subdir="a/b/ws" if tag.endswith("deep") else "ws")


def _asset(ws: Path, name: str) -> Path:
    return next((ws / "releases").rglob(name))


def _unpack(asset: Path, dest: Path) -> Path:
    with tarfile.open(asset) as tf:
        tf.extractall(dest, filter="data")
    return dest


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


LINUX = "zstd-1.5.4-linux-x86_64.tar.xz"


@pytest.fixture(scope="module")
def linux_assets() -> tuple[Path, Path]:
    """The same zstd workspace built in two folders of different depth."""
    one, rc1, data1 = built("linux", "1.5.4", "1.5.4", "linux-x86_64")
    two, rc2, data2 = built("linux-deep", "1.5.4", "1.5.4", "linux-x86_64")
    assert rc1 == 0, json.dumps(data1, indent=2)
    assert rc2 == 0, json.dumps(data2, indent=2)
    return _asset(one, LINUX), _asset(two, LINUX)


def test_two_folders_build_byte_identical_relocatable_assets(linux_assets: tuple[Path, Path]
                                                             ) -> None:
    a, b = linux_assets
    assert a.parent.parent.parent != b.parent.parent.parent
    assert _sha(a) == _sha(b)
    with tarfile.open(a) as tf:
        names = tf.getnames()
        files = {m.name: tf.extractfile(m).read()  # type: ignore[union-attr]
                 for m in tf.getmembers() if m.isfile()}
    pc = files["lib/pkgconfig/libzstd.pc"].decode()
    assert pc.splitlines()[0:1] == ["#   ZSTD - standard compression algorithm"]
    assert "prefix=${pcfiledir}/../..\n" in pc and "Version: 1.5.4" in pc
    for data in files.values():
        assert b".prebake/work" not in data and b"/builds/zstd-" not in data
    # upstream's package is kept (its targets file too), zstd::zstd is added beside it
    assert {"lib/cmake/zstd/zstdTargets.cmake", "lib/cmake/zstd/zstdConfigVersion.cmake",
            "lib/cmake/zstd/zstd-prebake-targets.cmake"} <= set(names)
    config = files["lib/cmake/zstd/zstdConfig.cmake"].decode()
    assert config.startswith('include("${CMAKE_CURRENT_LIST_DIR}/zstdTargets.cmake")')
    assert 'include("${CMAKE_CURRENT_LIST_DIR}/zstd-prebake-targets.cmake")' in config
    assert b'set(PACKAGE_VERSION "1.5.4")' in files["lib/cmake/zstd/zstdConfigVersion.cmake"]
    manifest = json.loads(files["share/prebake/manifest.json"])
    says = {e["file"]: e["version"] for e in manifest["guards"]["version"]["zstd"]["evidence"]}
    assert says == {"include/zstd.h": "1.5.4", "lib/pkgconfig/libzstd.pc": "1.5.4",
                    "lib/cmake/zstd/zstdConfigVersion.cmake": "1.5.4"}


def test_cmake_and_pkg_config_consumers_of_the_unpacked_asset(
        linux_assets: tuple[Path, Path], tmp_path: Path) -> None:
    prefix = _unpack(linux_assets[0], tmp_path / "somewhere" / "zstd")
    src = tmp_path / "consumer"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(CONSUMER)
    (src / "main.c").write_text(MAIN_C)
    conf = support.run(["cmake", "-S", str(src), "-B", str(tmp_path / "b"), "-DWANT=1.5.4",
                        f"-DCMAKE_PREFIX_PATH={prefix}"], tmp_path)
    assert "Configuring done" in conf.stdout
    support.run(["cmake", "--build", str(tmp_path / "b")], tmp_path)
    ran = support.run([str(tmp_path / "b" / "app")], tmp_path)
    assert ran.stdout == "zstd 1.5.4 round trip ok\n"
    newer = support.run(["cmake", "-S", str(src), "-B", str(tmp_path / "b2"), "-DWANT=1.6",
                         f"-DCMAKE_PREFIX_PATH={prefix}"], tmp_path, check=False)
    assert newer.returncode != 0 and "1.5.4" in newer.stderr
    pc = support.run(["pkg-config", "--cflags", "--libs", "libzstd"], tmp_path,
                     env={"PKG_CONFIG_PATH": str(prefix / "lib" / "pkgconfig")})
    flags = pc.stdout.split()
    dirs = {f[:2]: Path(f[2:]).resolve() for f in flags if f[:2] in ("-I", "-L")}
    assert dirs == {"-I": prefix.resolve() / "include", "-L": prefix.resolve() / "lib"}
    assert "-lzstd" in flags


def test_a_pin_the_source_contradicts_fails_naming_the_evidence() -> None:
    ws, rc, data = built("stale", "1.5.7", "1.5.4", "linux-x86_64")
    assert rc == 1, data
    (unit,) = data["units"]
    assert unit["state"] == "failed"
    msg = unit["message"]
    assert "disagrees with the pin (1.5.7)" in msg
    assert "ZSTD_VERSION_RELEASE 4" in msg
    assert "lib/cmake/zstd/zstdConfigVersion.cmake PACKAGE_VERSION 1.5.4" in msg
    assert "lib/pkgconfig/libzstd.pc Version: 1.5.4" in msg
    assert not list((ws / "releases").rglob("zstd-*"))


def _prebake_exe() -> str:
    exe = Path(sys.executable).with_name("prebake")
    assert exe.exists()
    return str(exe)


def test_an_emcmake_consumer_fetches_finds_and_runs_the_wasm_asset(tmp_path: Path) -> None:
    ws, rc, data = built("wasm", "1.5.7", "1.5.7", "wasm")
    assert rc == 0, json.dumps(data, indent=2)
    with tarfile.open(_asset(ws, "zstd-1.5.7-wasm.tar.xz")) as tf:
        pc = tf.extractfile("lib/pkgconfig/libzstd.pc").read().decode()  # type: ignore[union-attr]
    assert "prefix=${pcfiledir}/../..\n" in pc and "Version: 1.5.7" in pc
    src = tmp_path / "consumer"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(EMCMAKE_CONSUMER)
    (src / "main.c").write_text(MAIN_C)
    module_dir = support.run([_prebake_exe(), "cmake-module-path"], tmp_path).stdout.strip()
    env = {"PREBAKE_CACHE": str(tmp_path / "cache")}
    build = tmp_path / "build"
    conf = support.run(["emcmake", "cmake", "-S", str(src), "-B", str(build),
                        f"-DPREBAKE_MODULE_DIR={module_dir}",
                        f"-DPREBAKE_EXECUTABLE={_prebake_exe()}",
                        f"-DZSTD_STORE={(ws / 'releases').as_uri()}"], tmp_path, env=env,
                       check=False)
    assert conf.returncode == 0, conf.stdout + conf.stderr
    cache = (build / "CMakeCache.txt").read_text()
    assert "Emscripten.cmake" in cache  # a real Emscripten toolchain file configured it
    support.run(["cmake", "--build", str(build)], tmp_path, env=env)
    ran = support.run(["node", "--no-experimental-fetch", str(build / "app.js")], tmp_path)
    assert ran.stdout == "zstd 1.5.7 round trip ok\n"
