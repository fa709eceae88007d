"""dav1d through the built-in recipe, the suite's one real build of it: dav1d's own Meson build
from Debian's orig tarball of the pinned release, with prebake's pinned meson and ninja, the
platform's machine file (linux-x86_64 natively: Debian's gcc, a native file) and nasm for its
x86-64 assembly. The build is cached under $PREBAKE_TEST_CACHE by the workspace and prebake's
code.

The asset is fetched as an addon fetches it and judged as its consumers judge it: the version
proof (the ABI in ``version.h`` against the library's file name and soname, the release in
``dav1d.pc``), the license shipped, the relocated ``.pc`` and the CMake target ``dav1d::dav1d``
(a tiny consumer through ``find_package(dav1d)`` calling ``dav1d_version()``, and the same
through pkg-config). The other legs (wasm, linux-aarch64, windows-x86_64) are ``scripts/long-leg
dav1d``'s (docs/flagship.md).
"""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests import support

VERSION = "1.5.4"
ORIG = "debian:pool/main/d/dav1d/dav1d_{}.orig.tar.xz"
# Debian's archive of the release (sid's dav1d 1.5.4-1): sha256 and size, read by hand (what
# `prebake pin dav1d 1.5.4` locks: examples/flagship/prebake.sources.lock)
ARCHIVE = ("686616b7c69eb88d44459391ab25cac13b6647a3b288835c5784e71c1514a5c5", 1038852)
WORKSPACE = f"""\
[project]
name = "dav1d-ws"
version = "0.1.0"

[pins]
dav1d = "{VERSION}"

[platforms.linux-x86_64]
os = "linux"
arch = "x86_64"
env_unset = ["CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS"]
toolchain = {{ cc = "gcc", cxx = "g++", ar = "ar" }}
contract = {{ extends = "manylinux_2_36_x86_64", allowed_licenses = ["BSD-*"] }}
link_test = {{ flags = ["-pthread"] }}

[stages.media]
recipes = ["dav1d"]
package = "per-recipe"
"""
LOCK = (f'version = 1\n\n[[source]]\nurl = "{ORIG.format(VERSION)}"\nsha256 = "{ARCHIVE[0]}"\n'
        f"size = {ARCHIVE[1]}\n")
CONSUMER_C = """\
#include <stdio.h>
#include <string.h>
#include <dav1d/dav1d.h>
int main(void) {
  unsigned api = dav1d_version_api();
  printf("%s %u.%u.%u\\n", dav1d_version(), DAV1D_API_MAJOR(api), DAV1D_API_MINOR(api),
         DAV1D_API_PATCH(api));
  return DAV1D_API_MAJOR(api) != DAV1D_API_VERSION_MAJOR;
}
"""
CONSUMER_CMAKE = """\
cmake_minimum_required(VERSION 3.16)
project(dav1d_version_check C)
find_package(dav1d REQUIRED CONFIG)
add_executable(version_check version_check.c)
target_link_libraries(version_check PRIVATE dav1d::dav1d)
"""
# what the library may need at load time: the C library's
SYSTEM = {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "ld-linux-x86-64.so.2"}

pytestmark = pytest.mark.skipif(shutil.which("nasm") is None or shutil.which("gcc") is None,
                                reason="needs nasm and gcc (scripts/bootstrap)")


@pytest.fixture(scope="module")
def built() -> Path:
    # the suite's download cache: the orig tarball is then there for the tests that serve the
    # flagship's lock from a loopback mirror (tests/mirror_build.py), as FFmpeg's is
    ws, rc, data = support.cached_prebake_build(
        "dav1d-linux-x86_64", {"prebake.toml": WORKSPACE, "prebake.sources.lock": LOCK},
        ["build", "-j", "2"], env={"PREBAKE_CACHE": str(support.CACHE / "prebake-cache")},
        timeout=1800)
    assert rc == 0, json.dumps(data, indent=1)[-3000:]
    return ws


@pytest.fixture(scope="module")
def asset(built: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    into = tmp_path_factory.mktemp("dav1d-asset")
    proc = support.prebake("-C", built, "fetch", f"dav1d=={VERSION}", "--platform",
                           "linux-x86_64", "--into", into, "--lock", into.parent / "lock")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return into


def _manifest(asset: Path) -> dict[str, Any]:
    return dict(json.loads((asset / "share" / "prebake" / "manifest.json").read_text()))


def test_the_version_proof_holds_the_abi_to_the_header_and_the_release_to_the_pin(
        asset: Path) -> None:
    manifest = _manifest(asset)
    says = {(e["file"], e["says"]): e["version"]
            for e in manifest["guards"]["version"]["dav1d"]["evidence"]}
    assert says[("lib/libdav1d.so.7.0.0", "file name")] == "7.0.0"
    assert says[("lib/libdav1d.so", "soname")] == "7"
    assert says[("include/dav1d/version.h", "DAV1D_API_VERSION_MAJOR 7, "
                 "DAV1D_API_VERSION_MINOR 0, DAV1D_API_VERSION_PATCH 0")] == "7.0.0"
    assert says[("lib/pkgconfig/dav1d.pc", "Version:")] == VERSION
    (fact,) = [f for f in manifest["facts"] if f["path"] == "lib/libdav1d.so"]
    assert set(fact["needed"]) <= SYSTEM, fact["needed"]
    assert fact["soname"] == "libdav1d.so.7"


def test_the_license_is_proven_from_the_shipped_copying(asset: Path) -> None:
    """BSD-2-Clause from dav1d's own COPYING (LicenseText), in the manifest and the SBOM,
    and allowed by the contract's allowed_licenses (BSD-*)."""
    text = (asset / "share" / "licenses" / "dav1d" / "COPYING").read_text()
    assert text.startswith("Copyright © 2018-2025, VideoLAN and dav1d authors")
    manifest = _manifest(asset)
    assert [r["license"] for r in manifest["recipes"]] == ["BSD-2-Clause"]
    record = manifest["guards"]["license"]["dav1d"]
    assert record["spdx"] == "BSD-2-Clause"
    assert [e["file"] for e in record["evidence"]] == ["share/licenses/dav1d/COPYING"]
    sbom = json.loads((asset / "share" / "prebake" / "sbom.cdx.json").read_text())
    assert "BSD-2-Clause" in json.dumps(sbom["components"])


def test_the_pc_is_relocated_and_the_cmake_target_links(asset: Path, tmp_path: Path) -> None:
    pc = (asset / "lib" / "pkgconfig" / "dav1d.pc").read_text()
    assert pc.startswith("prefix=${pcfiledir}/../..\n"), pc
    assert str(support.CACHE) not in pc and "/.prebake/" not in pc
    src = tmp_path / "src"
    src.mkdir()
    (src / "version_check.c").write_text(CONSUMER_C)
    (src / "CMakeLists.txt").write_text(CONSUMER_CMAKE)
    support.run(["cmake", "-S", str(src), "-B", str(tmp_path / "b"),
                 f"-DCMAKE_PREFIX_PATH={asset}", "-DCMAKE_BUILD_TYPE=Release"], tmp_path)
    support.run(["cmake", "--build", str(tmp_path / "b")], tmp_path)
    ran = support.run([str(tmp_path / "b" / "version_check")], tmp_path)
    assert ran.stdout == f"{VERSION} 7.0.0\n"
    # the same program through the relocated .pc (an unpacked asset, any folder)
    env = {"PKG_CONFIG_LIBDIR": str(asset / "lib" / "pkgconfig"), "PKG_CONFIG_PATH": ""}
    flags = support.run(["pkg-config", "--cflags", "--libs", "dav1d"], tmp_path, env=env).stdout
    assert "-ldav1d" in flags and str(asset) in flags.replace("//", "/"), flags
    support.run(["gcc", str(src / "version_check.c"), *shlex.split(flags),
                 f"-Wl,-rpath,{asset}/lib", "-o", "pc_check"], tmp_path)
    assert support.run([str(tmp_path / "pc_check")], tmp_path).stdout == ran.stdout
