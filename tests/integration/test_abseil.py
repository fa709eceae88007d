"""A heavy upstream library through prebake: abseil 20240722.0 from Debian's source tarball,
built and installed by its own CMake (about 90 static archives, 190 ``.pc`` files and the
``absl`` CMake package with usage requirements such as ``cxx_std_17``).

* no packaged file names a build folder: every ``.pc`` is ``${pcfiledir}``-relative and no
  archive embeds a ``.prebake/work`` source path (``-ffile-prefix-map`` maps ``__FILE__``);
* the same workspace in two folders gives byte-identical assets;
* upstream's ``absl`` package is kept and the asset's ``abseil::abseil`` wraps ``absl::strings``,
  so a consumer without ``CMAKE_CXX_STANDARD`` gets abseil's C++ standard and links;
* the version proof reads abseil's ConfigVersion (``20240722``), its ``.pc`` files and the
  ``ABSL_LTS_RELEASE_*`` header macros against the pin ``20240722.0``;
* one broken member (an object calling ``absl_nonexistent_fn`` appended to
  ``libabsl_strings.a``) fails the build's whole-archive proof, naming the member and symbol.

abseil's build is about 150 s of CPU; each folder's build is cached under $PREBAKE_TEST_CACHE
by content (workspace, tarball, prebake's code), so a session builds each once.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tarfile
from pathlib import Path

import pytest

from tests import support

pytestmark = pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake")

POOL = "a/abseil/abseil_20240722.0.orig.tar.gz"

RECIPE = '''\
"""abseil from Debian's .orig tarball, built and installed by its own CMake."""

from prebake.recipes import Build, Outputs, Recipe, Snippet, UrlSource, VersionCheck

RECIPE = Recipe(
    name="abseil",
    pin="abseil",
    sources=(UrlSource("URL", sha256="SHA256"),),
    platforms={"linux-x86_64": Build(commands=(
        "cmake -S {src} -B {build} -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX={prefix}"
        " -DCMAKE_INSTALL_LIBDIR=lib -DABSL_PROPAGATE_CXX_STD=ON -DABSL_BUILD_TESTING=OFF"
        " -DCMAKE_POSITION_INDEPENDENT_CODE=ON",
        "cmake --build {build} -j {jobs}",
        "cmake --install {build}",
    ), env={"CC": "{cc}", "CXX": "{cxx}"})},
    outputs=Outputs(
        libs={"*": tuple(f"lib/libabsl_{n}.a" for n in (
            "strings", "strings_internal", "int128", "string_view", "throw_delegate",
            "base", "raw_logging_internal", "log_severity", "spinlock_wait"))},
        headers=("include/absl/strings/str_cat.h",),
        cmake_target=("absl::strings",),
    ),
    kind={"*": "static"},
    version_check=VersionCheck("include/absl/base/config.h",
                               ("ABSL_LTS_RELEASE_VERSION", "ABSL_LTS_RELEASE_PATCH_LEVEL")),
    link_test=Snippet(code=(
        "#include <absl/strings/str_cat.h>\\n"
        "int main() { return absl::StrCat(\\"a\\", 1).size() == 2 ? 0 : 1; }\\n")),
)
'''

WORKSPACE = support.gcc_workspace("abseil-relocate", 'abseil = "20240722.0"', "deps",
                                  '["abseil"]')

CONSUMER = """\
cmake_minimum_required(VERSION 3.16)
project(consumer CXX)
set(CMAKE_EXPORT_COMPILE_COMMANDS ON)
find_package(abseil 20240722 CONFIG REQUIRED)
add_executable(app main.cpp)
target_link_libraries(app PRIVATE abseil::abseil)
"""
MAIN_CPP = """\
#include <iostream>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_split.h>
int main() {
  std::cout << absl::StrCat("abseil ", ABSL_LTS_RELEASE_VERSION, " ",
                            absl::StrSplit("a,b,c", ',').begin()->size()) << "\\n";
}
"""
ASSET = "abseil-20240722.0-linux-x86_64.tar.xz"
SOURCE_CACHE = support.CACHE / "prebake-sources"


def _build(name: str, subdir: str) -> Path:
    support.seed_source_cache(SOURCE_CACHE, POOL)
    files = {"prebake.toml": WORKSPACE,
             "recipes/abseil.py": RECIPE.replace("URL", support.debian_ref(POOL))
             .replace("SHA256", support.DEBIAN_ORIG[POOL])}
    ws, rc, data = support.cached_prebake_build(
        name, files, ["build", "--stage", "deps", "--platform", "linux-x86_64"],
        env={"PREBAKE_CACHE": str(SOURCE_CACHE)}, subdir=subdir)
    assert rc == 0, json.dumps(data, indent=2)[-4000:]
    return next((ws / "releases").rglob(ASSET))


@pytest.fixture(scope="module")
def assets() -> tuple[Path, Path]:
    return _build("abseil", "ws"), _build("abseil-deep", "a/b/c/ws")


def _files(asset: Path) -> dict[str, bytes]:
    with tarfile.open(asset) as tf:
        return {m.name: tf.extractfile(m).read()  # type: ignore[union-attr]
                for m in tf.getmembers() if m.isfile()}


def test_two_folders_give_the_same_bytes_and_no_build_path(assets: tuple[Path, Path]) -> None:
    a, b = assets
    assert a.resolve().parents[3] != b.resolve().parents[3]
    assert hashlib.sha256(a.read_bytes()).hexdigest() == hashlib.sha256(b.read_bytes()).hexdigest()
    files = _files(a)
    archives = [n for n in files if n.endswith(".a")]
    pcs = [n for n in files if n.endswith(".pc")]
    assert len(archives) >= 80 and len(pcs) >= 180  # abseil's own install, all of it
    for name, data in files.items():
        assert b".prebake/work" not in data, name
    for name in pcs:
        text = files[name].decode()
        assert "prefix=${pcfiledir}/../..\n" in text, name
    assert "lib/cmake/absl/abslConfig.cmake" in files
    config = files["lib/cmake/abseil/abseilConfig.cmake"].decode()
    assert "find_dependency(absl CONFIG" in config and '"absl::strings"' in config
    manifest = json.loads(files["share/prebake/manifest.json"])
    says = {e["file"]: e["version"] for e in manifest["guards"]["version"]["abseil"]["evidence"]}
    assert says["include/absl/base/config.h"] == "20240722.0"
    assert says["lib/cmake/absl/abslConfigVersion.cmake"] == "20240722"
    assert says["lib/pkgconfig/absl_strings.pc"] == "20240722"


def test_a_consumer_without_cxx_standard_links_through_abseil_abseil(
        assets: tuple[Path, Path], tmp_path: Path) -> None:
    prefix = tmp_path / "elsewhere" / "abseil"
    with tarfile.open(assets[0]) as tf:
        tf.extractall(prefix, filter="data")
    src = tmp_path / "consumer"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(CONSUMER)
    (src / "main.cpp").write_text(MAIN_CPP)
    build = tmp_path / "build"
    # Debian's clang++ (14) defaults to C++14: without abseil's cxx_std_17 the consumer does not
    # compile (abseil's installed headers use std::string_view: "no type named 'string_view'")
    support.run(["cmake", "-S", str(src), "-B", str(build), f"-DCMAKE_PREFIX_PATH={prefix}",
                 "-DCMAKE_CXX_COMPILER=clang++"], tmp_path)
    commands = json.loads((build / "compile_commands.json").read_text())
    (main,) = [c["command"] for c in commands if c["file"].endswith("main.cpp")]
    assert "-std=gnu++17" in main  # abseil's compile feature reached a consumer that set none
    assert f"{prefix}/include" in main  # and its include folder, from upstream's target
    support.run(["cmake", "--build", str(build), "-j", "2"], tmp_path)
    ran = support.run([str(build / "app")], tmp_path)
    assert ran.stdout == "abseil 20240722 1\n"


def _broken_recipe() -> str:
    """The abseil recipe, but its "build" copies an existing install (``../install``)."""
    head, rest = RECIPE.split('    platforms={"linux-x86_64": Build(commands=(', 1)
    rest = rest.split("    outputs=Outputs(", 1)[1]
    return (head.replace('sources=(UrlSource("URL", sha256="SHA256"),),',
                         'sources=(LocalSource("../install"),),')
            .replace("Snippet, UrlSource,", "LocalSource, Snippet, UrlSource,")
            + '    platforms={"linux-x86_64": Build(commands=("cmake -E copy_directory {src} '
            '{prefix}",))},\n    outputs=Outputs(' + rest)


def test_one_broken_member_of_the_archives_fails_the_build(assets: tuple[Path, Path],
                                                            tmp_path: Path) -> None:
    """abseil's own install (from the built asset) with one object appended to
    ``libabsl_strings.a``, repackaged by a recipe that copies it: the snippet alone would link,
    the whole-archive proof does not."""
    ws = tmp_path / "ws"
    install = ws / "install"
    with tarfile.open(assets[0]) as tf:
        tf.extractall(install, filter="data")
    shutil.rmtree(install / "share" / "prebake")
    shutil.rmtree(install / "lib" / "cmake" / "abseil")
    (tmp_path / "broken.c").write_text("void absl_nonexistent_fn(void);\n"
                                       "void absl_broken(void) { absl_nonexistent_fn(); }\n")
    support.run(["gcc", "-c", "-fPIC", "broken.c", "-o", "broken.o"], tmp_path)
    support.run(["ar", "q", str(install / "lib" / "libabsl_strings.a"), "broken.o"], tmp_path)
    (ws / "recipes").mkdir()
    (ws / "recipes" / "abseil.py").write_text(_broken_recipe())
    (ws / "prebake.toml").write_text(WORKSPACE)
    proc = support.prebake("-C", ws, "build", "--stage", "deps", "--platform", "linux-x86_64",
                           "--json", timeout=900)
    data = json.loads(proc.stdout)
    assert proc.returncode == 1, data
    (unit,) = data["units"]
    assert unit["state"] == "failed"
    assert "whole-archive link failed" in unit["message"]
    assert "absl_nonexistent_fn" in unit["message"] and "broken.o" in unit["message"]
    assert not list((ws / "releases").rglob("abseil-*"))
