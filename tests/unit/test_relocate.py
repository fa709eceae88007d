"""Relocation, version proof and upstream CMake packages on small install trees (the real
upstream builds are in tests/integration/test_upstream_cmake.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from prebake.bake.stamp import prefix_files
from prebake.package import pcjudge, relocate, upstream_cmake, version_proof
from prebake.package.archive import Entry, collect_tree
from prebake.recipes import Component, Recipe, VersionCheck, VersionString, validate_recipe
from prebake.recipes.api import Outputs
from prebake.toolchain import prefix_map

ZSTD_PC = """\
prefix={p}
exec_prefix=${{prefix}}
includedir=${{prefix}}/include
libdir=${{exec_prefix}}/lib

Name: zstd
Version: 1.5.4
Libs: -L${{libdir}} -lzstd
Cflags: -I${{includedir}} -I{p}/include/extra
"""


def _tree(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, bytes):
            (root / rel).write_bytes(data)
        else:
            (root / rel).write_text(data)


def test_pc_cmake_and_la_are_rewritten_relative_to_their_file(tmp_path: Path) -> None:
    prefix = tmp_path / "ws/.prebake/work/wasm/deps-zstd/prefix"
    p = str(prefix)
    _tree(prefix, {
        "lib/pkgconfig/libzstd.pc": ZSTD_PC.format(p=p),
        "lib/cmake/zstd/zstdTargets.cmake":
            f'set_target_properties(z PROPERTIES IMPORTED_LOCATION "{p}/lib/libzstd.a")\n'
            f'set(other "{p}2/lib")\n',
        "lib/libzstd.la": f"libdir='{p}/lib'\n",
        "share/doc/readme.txt": f"built in {p}\n",
    })
    paths = relocate.BuildPaths.of(prefix, tmp_path / "ws")
    files = [e.path for e in collect_tree(prefix) if e.kind == "file"]
    done = relocate.rewrite_install(prefix, files, paths)
    assert done.changed == ["lib/cmake/zstd/zstdTargets.cmake", "lib/pkgconfig/libzstd.pc"]
    assert done.dropped == ["lib/libzstd.la"] and not (prefix / "lib/libzstd.la").exists()
    pc = (prefix / "lib/pkgconfig/libzstd.pc").read_text()
    assert pc.startswith("prefix=${pcfiledir}/../..\n")
    assert "Cflags: -I${includedir} -I${prefix}/include/extra" in pc
    cm = (prefix / "lib/cmake/zstd/zstdTargets.cmake").read_text()
    assert '"${CMAKE_CURRENT_LIST_DIR}/../../../lib/libzstd.a"' in cm
    assert f"{p}2/lib" in cm  # another folder that merely starts like the prefix is not touched
    # what prebake cannot rewrite is caught by the scan (bytes: ``{p}2`` counts), naming the
    # file and the most specific folder
    leaks = relocate.scan(collect_tree(prefix), paths)
    assert [(x.path, x.folder) for x in leaks] == [
        ("lib/cmake/zstd/zstdTargets.cmake", p), ("share/doc/readme.txt", p)]


def test_scan_reads_binary_files_and_in_memory_entries(tmp_path: Path) -> None:
    work = tmp_path / "ws/.prebake/work/linux/core"
    blob = b"\x7fELF\0\0" + str(work / "zstd/src/lib/x.c").encode() + b"\0\xff" * 10
    _tree(tmp_path / "out", {"lib/libx.a": blob, "lib/empty.a": b"", "include/x.h": "int x;\n"})
    entries = [*collect_tree(tmp_path / "out"),
               Entry("share/prebake/manifest.json", "file", data=str(work).encode())]
    leaks = relocate.scan(entries, relocate.BuildPaths.of(work / "prefix", work))
    assert [x.path for x in leaks] == ["lib/libx.a", "share/prebake/manifest.json"]
    assert all(x.folder == str(work) for x in leaks)
    assert "lib/libx.a (holds " in relocate.render_leaks("zstd/linux", leaks)


def test_prefix_map_reaches_the_compilers_that_take_it(tmp_path: Path) -> None:
    flags = prefix_map.prefix_map_flags(tmp_path / "w")
    assert flags == (f"-ffile-prefix-map={tmp_path / 'w'}=.",)
    assert prefix_map.compiler_argv(("gcc",), flags) == ("gcc", *flags)
    assert prefix_map.compiler_argv(("/usr/bin/clang++-15",), flags)[-1] == flags[0]
    assert prefix_map.compiler_argv(("aarch64-linux-gnu-g++",), flags)[-1] == flags[0]
    assert prefix_map.compiler_argv(("python", "-m", "ziglang", "cc"), flags)[-1] == flags[0]
    assert prefix_map.compiler_argv(("cl.exe",), flags) == ("cl.exe",)
    env = prefix_map.compiler_env({"EMCC_CFLAGS": "-O2"}, ("emcc",), flags)
    assert env["EMCC_CFLAGS"] == f"-O2 {flags[0]}"
    assert "EMCC_CFLAGS" not in prefix_map.compiler_env({}, ("gcc",), flags)


@pytest.mark.parametrize(("found", "pin", "partial", "ok"), [
    ("1.5.4", "1.5.4", False, True), ("20240722", "20240722.0", False, True),
    ("1.5.4", "1.5.7", False, False), ("1.5", "1.5.4", True, True),
    ("1.4", "1.5.4", True, False), ("abc", "abc", False, True), ("1.0", "main", False, False),
])
def test_versions_agree_as_numbers(found: str, pin: str, partial: bool, ok: bool) -> None:
    assert version_proof.agrees(found, pin, partial=partial) is ok


ZSTD_H = """\
#define ZSTD_VERSION_MAJOR    1
#define ZSTD_VERSION_MINOR    5
#define ZSTD_VERSION_RELEASE  4   /* the patch level */
#define ZSTD_VERSION_STRING   "1.5.4"
"""


def _zstd_install(prefix: Path) -> list[str]:
    _tree(prefix, {
        "include/zstd.h": ZSTD_H,
        "lib/pkgconfig/libzstd.pc": ZSTD_PC.format(p="${pcfiledir}/../.."),
        "lib/cmake/zstd/zstdConfigVersion.cmake": 'set(PACKAGE_VERSION "1.5.4")\n',
        "lib/cmake/zstd/zstdConfig.cmake": 'include("${CMAKE_CURRENT_LIST_DIR}/t.cmake")\n',
        "lib/cmake/zstd/t.cmake": "add_library(zstd::libzstd_static STATIC IMPORTED)\n",
        "lib/libprotobuf.so.3.21.12": "",
    })
    return prefix_files(prefix)  # what the build hands the version proof


def test_a_stale_pin_fails_naming_every_piece_of_evidence(tmp_path: Path) -> None:
    files = _zstd_install(tmp_path)
    check = VersionCheck("include/zstd.h", ("ZSTD_VERSION_MAJOR", "ZSTD_VERSION_MINOR",
                                            "ZSTD_VERSION_RELEASE"))
    recipe = Recipe("zstd", "zstd", version_check=check,
                    bundled=(Component("protobuf", "3.21.12"),))
    good = version_proof.prove(recipe, "1.5.4", tmp_path, files)
    assert good.ok and len(good.evidence) == 4
    stale = version_proof.prove(recipe, "1.5.7", tmp_path, files)
    text = stale.failure("zstd")
    assert not stale.ok and "pin (1.5.7)" in text
    for what in ("ZSTD_VERSION_RELEASE 4", "zstdConfigVersion.cmake PACKAGE_VERSION 1.5.4",
                 "libzstd.pc Version: 1.5.4"):
        assert what in text
    assert "protobuf" not in text  # a bundled component's own version is right
    one = version_proof.prove(Recipe("zstd", "zstd", version_check=VersionCheck(
        "include/zstd.h", "ZSTD_VERSION_STRING")), "1.5.4", tmp_path, [])
    assert one.ok and one.evidence[0].version == "1.5.4"
    missing = version_proof.prove(Recipe("zstd", "zstd", version_check=VersionCheck(
        "include/zstd.h", "ZSTD_NOPE")), "1.5.4", tmp_path, [])
    assert missing.problems == ["version_check: include/zstd.h defines no ZSTD_NOPE"]


def test_upstream_package_is_kept_and_wrapped(tmp_path: Path) -> None:
    files = _zstd_install(tmp_path)
    pkgs = upstream_cmake.find_packages(tmp_path, files)
    assert [(p.name, p.targets) for p in pkgs] == [("zstd", ("zstd::libzstd_static",))]
    with pytest.raises(upstream_cmake.UpstreamCMakeError, match="cmake_target"):
        upstream_cmake.plan("zstd", "1.5.4", "x86_64", pkgs, ())
    with pytest.raises(upstream_cmake.UpstreamCMakeError, match="zstd::nope"):
        upstream_cmake.plan("zstd", "1.5.4", "x86_64", pkgs, ("zstd::nope",))
    plan = upstream_cmake.plan("zstd", "1.5.4", "x86_64", pkgs, ("zstd::libzstd_static",))
    assert not plan.generate_own
    upstream_cmake.apply(tmp_path, plan)
    upstream_cmake.apply(tmp_path, plan)  # idempotent
    config = (tmp_path / "lib/cmake/zstd/zstdConfig.cmake").read_text()
    assert config.startswith('include("${CMAKE_CURRENT_LIST_DIR}/t.cmake")\n')
    assert config.count("zstd-prebake-targets.cmake") == 1
    wrapper = (tmp_path / "lib/cmake/zstd/zstd-prebake-targets.cmake").read_text()
    assert 'INTERFACE_LINK_LIBRARIES "zstd::libzstd_static"' in wrapper
    other = upstream_cmake.plan("abseil", "20240722.0", "x86_64",
                                [upstream_cmake.Package("absl", "lib/cmake/absl/abslConfig.cmake",
                                                        None, ("absl::base", "absl::strings"))],
                                ("absl::strings",))
    text = other.files["lib/cmake/abseil/abseilConfig.cmake"].decode()
    assert 'find_dependency(absl CONFIG PATHS "${CMAKE_CURRENT_LIST_DIR}/../absl"' in text
    assert "lib/cmake/abseil/abseilConfigVersion.cmake" in other.files


def test_recipe_fields_are_validated() -> None:
    bad = Recipe("zstd", "zstd", version_check=VersionCheck("/abs/zstd.h", ("1BAD",)),
                 outputs=Outputs(cmake_target="libzstd_static"))
    problems = {p.key.split(": ", 1)[-1]: p.message for p in validate_recipe(bad)}
    assert "RECIPE.version_check.header" in problems
    assert "not a C macro name" in problems["RECIPE.version_check.macros"]
    assert "NAMESPACE::name" in problems["RECIPE.outputs.cmake_target"]


AVCODEC_MAJOR = "#define LIBAVCODEC_VERSION_MAJOR  61\n"
AVCODEC_H = ('#include "version_major.h"\n#define LIBAVCODEC_VERSION_MINOR  19\n'
             "#define LIBAVCODEC_VERSION_MICRO 101\n")
AVCODEC_PC = "prefix=${{pcfiledir}}/../..\nName: libavcodec\nVersion: {v}\nLibs: -lavcodec\n"


def _ffmpeg_like(prefix: Path, pc_version: str = "61.19.101",
                 release: bytes = b"7.1.5") -> list[str]:
    _tree(prefix, {
        "include/libavcodec/version_major.h": AVCODEC_MAJOR,
        "include/libavcodec/version.h": AVCODEC_H,
        "lib/pkgconfig/libavcodec.pc": AVCODEC_PC.format(v=pc_version),
        "lib/libavcodec.so.61.19.101": b"\x7fELF...\x00FFmpeg version " + release + b"\x00..",
        "bin/avcodec-61.dll": b"MZ...",
    })
    return sorted(prefix_files(prefix))


FFMPEG_CHECKS = (
    VersionString(r"FFmpeg version ([0-9][0-9.]*)"),
    VersionCheck(("include/libavcodec/version_major.h", "include/libavcodec/version.h"),
                 ("LIBAVCODEC_VERSION_MAJOR", "LIBAVCODEC_VERSION_MINOR",
                  "LIBAVCODEC_VERSION_MICRO"), library="avcodec"),
)


def test_a_library_with_a_version_of_its_own_is_held_to_its_header(tmp_path: Path) -> None:
    files = _ffmpeg_like(tmp_path)
    recipe = Recipe("ffmpeg", "ffmpeg", version_check=FFMPEG_CHECKS)
    libs = {"lib/libavcodec.so.61.19.101": "avcodec"}
    good = version_proof.prove(recipe, "7.1.5", tmp_path, files, libraries=libs)
    assert good.ok, good.failure("ffmpeg")
    said = {e.render() for e in good.evidence}
    assert "bin/avcodec-61.dll DLL name 61" in said  # the DLL's own name, for its library
    assert "lib/libavcodec.so.61.19.101 bytes 'FFmpeg version ([0-9][0-9.]*)' 7.1.5" in said
    # the .pc states another libavcodec than the headers: that library's evidence disagrees
    stale = tmp_path / "stale"
    bad = version_proof.prove(recipe, "7.1.5", stale, _ffmpeg_like(stale, "61.3.100"),
                              libraries=libs)
    assert not bad.ok and [d.expected for d in bad.disagreements] == ["61.19.101"]
    # the bytes hold another release than the pin (a bump that rebuilt nothing)
    old = tmp_path / "old"
    bump = version_proof.prove(recipe, "8.1.2", old, _ffmpeg_like(old, release=b"7.1.5"),
                               libraries=libs)
    assert "FFmpeg version" in bump.failure("ffmpeg") and not bump.ok
    # a library the string must be in but is not: a failure, never "no evidence"
    blank = tmp_path / "blank"
    files = _ffmpeg_like(blank)
    (blank / "lib/libavcodec.so.61.19.101").write_bytes(b"\x7fELF")
    none = version_proof.prove(recipe, "7.1.5", blank, files, libraries=libs)
    assert none.problems == ["version_check: lib/libavcodec.so.61.19.101 holds no string "
                             "matching 'FFmpeg version ([0-9][0-9.]*)'"]


def test_a_library_the_platform_does_not_build_is_not_checked_there(tmp_path: Path) -> None:
    """FFmpeg's wasm leg builds no libavdevice: its header check and its name in the release
    string's libraries are skipped there; a check none of whose libraries ship still fails."""
    files = _ffmpeg_like(tmp_path)
    checks = (VersionString(r"FFmpeg version ([0-9][0-9.]*)", ("avdevice", "avcodec")),
              *FFMPEG_CHECKS[1:],
              VersionCheck(("include/libavdevice/version_major.h",),
                           ("LIBAVDEVICE_VERSION_MAJOR",), library="avdevice"))
    recipe = Recipe("ffmpeg", "ffmpeg", version_check=checks)
    libs = {"lib/libavcodec.so.61.19.101": "avcodec"}
    proof = version_proof.prove(recipe, "7.1.5", tmp_path, files, libraries=libs)
    assert proof.ok, proof.failure("ffmpeg")
    only_devices = Recipe("ffmpeg", "ffmpeg", version_check=(
        VersionString(r"FFmpeg version ([0-9][0-9.]*)", ("avdevice",)),))
    none = version_proof.prove(only_devices, "7.1.5", tmp_path, files, libraries=libs)
    assert none.problems == ["version_check: 'FFmpeg version ([0-9][0-9.]*)' names libraries "
                             "avdevice, none of which the recipe ships here"]


def test_a_dll_name_is_evidence_only_for_a_library_with_its_own_version(tmp_path: Path
                                                                         ) -> None:
    # MinGW's runtime DLLs carry an ABI number, not the recipe's version
    _tree(tmp_path, {"bin/libwinpthread-1.dll": b"MZ"})
    assert version_proof.install_evidence(tmp_path, ["bin/libwinpthread-1.dll"]) == []
    # a one-number soname: the major of a library with its own version, else an ABI number
    shared = {"lib/libavcodec.so": {"soname": "libavcodec.so.61"},
              "lib/libz.so": {"soname": "libz.so.1"}}
    said = version_proof.install_evidence(tmp_path, [], shared, ["avcodec"])
    assert [e.render() for e in said] == ["lib/libavcodec.so soname 61"]


def test_a_pc_that_names_a_folder_outside_the_asset_is_found() -> None:
    text = ("prefix=${pcfiledir}/../..\nlibdir=${prefix}/lib\nName: foo\nVersion: 1\n"
            "Description: A / B codec\n"
            "Libs: -L${libdir} -lfoo\nLibs.private: -lm -L/usr/lib/x86_64-linux-gnu -lz\n"
            "Cflags: -I${prefix}/include -I/opt/x/include\n")
    said = [x.render() for x in pcjudge.judge_files({"lib/pkgconfig/foo.pc": text.encode()})]
    assert said == [
        "lib/pkgconfig/foo.pc: pkg-config --cflags --libs --static gives -I/opt/x/include",
        "lib/pkgconfig/foo.pc: pkg-config --cflags --libs --static gives "
        "-L/usr/lib/x86_64-linux-gnu"]
    local = b"prefix=/usr/local\nlibdir=${prefix}/lib\nName: l\nVersion: 1\nDescription: l\n"
    assert [x.render() for x in pcjudge.judge_files({"lib/pkgconfig/l.pc": local})] == [
        "lib/pkgconfig/l.pc: pkg-config --variable=libdir gives /usr/local/lib",
        "lib/pkgconfig/l.pc: pkg-config --variable=prefix gives /usr/local"]


def test_a_tree_given_by_a_relative_path_is_judged_where_it_is(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``prebake fetch --into build/x`` (the main job's way) unpacks to a relative folder: its
    relocated ``.pc`` files point inside the asset and are not refused as relative paths."""
    pc = tmp_path / "asset" / "lib" / "pkgconfig" / "foo.pc"
    pc.parent.mkdir(parents=True)
    pc.write_text("prefix=${pcfiledir}/../..\nName: foo\nDescription: d\nVersion: 1\n"
                  "Cflags: -I${prefix}/include\nLibs: -L${prefix}/lib -lfoo\n")
    monkeypatch.chdir(tmp_path)
    assert pcjudge.judge_tree(Path("asset"), ["lib/pkgconfig/foo.pc"]) == []
    pc.write_text(pc.read_text().replace("-I${prefix}/include", "-I/usr/include/foo"))
    (leak,) = pcjudge.judge_tree(Path("asset"), ["lib/pkgconfig/foo.pc"])
    assert "/usr/include/foo" in leak.render()


DAV1D_VERSION_H = ("#define DAV1D_API_VERSION_MAJOR 7\n#define DAV1D_API_VERSION_MINOR 0\n"
                   "#define DAV1D_API_VERSION_PATCH 0\n")
DAV1D_PC = "prefix=${{pcfiledir}}/../..\nName: libdav1d\nVersion: {v}\nLibs: -ldav1d\n"
DAV1D_ABI = VersionCheck("include/dav1d/version.h", ("DAV1D_API_VERSION_MAJOR",
                                                     "DAV1D_API_VERSION_MINOR",
                                                     "DAV1D_API_VERSION_PATCH"),
                         library="dav1d", abi=True)


def _dav1d_like(prefix: Path, pc_version: str = "1.5.4", so: str = "7.0.0") -> list[str]:
    _tree(prefix, {"include/dav1d/version.h": DAV1D_VERSION_H,
                   "lib/pkgconfig/dav1d.pc": DAV1D_PC.format(v=pc_version),
                   f"lib/libdav1d.so.{so}": b"\x7fELF"})
    return sorted(prefix_files(prefix))


def test_a_library_named_by_its_abi_has_its_package_hold_the_release(tmp_path: Path) -> None:
    """dav1d 1.5.4: DAV1D_API_VERSION_* 7.0.0 is the version of its file, soname and DLL
    resource's FileVersion; its .pc and the DLL's ProductVersion say the release. Each is
    held to its own: neither the old rule (everything to the header) nor the pin alone."""
    recipe = Recipe("dav1d", "dav1d", version_check=DAV1D_ABI)
    shared = {"lib/libdav1d.so.7.0.0": {"soname": "libdav1d.so.7", "stem": "dav1d"},
              "bin/libdav1d.dll": {"stem": "dav1d", "details": {
                  "file_version": "7.0.0.0", "product_version": "1.5.4.0"}}}
    libs = {"lib/libdav1d.so.7.0.0": "dav1d"}
    good = version_proof.prove(recipe, "1.5.4", tmp_path, _dav1d_like(tmp_path), shared, libs)
    assert good.ok, good.failure("dav1d")
    assert {e.render() for e in good.evidence} >= {
        "lib/pkgconfig/dav1d.pc Version: 1.5.4", "lib/libdav1d.so.7.0.0 file name 7.0.0",
        "lib/libdav1d.so.7.0.0 soname 7", "bin/libdav1d.dll version resource FileVersion 7.0.0.0",
        "bin/libdav1d.dll version resource ProductVersion 1.5.4.0"}
    # a bump whose build is stale: the .pc says the old release
    old = tmp_path / "old"
    stale = version_proof.prove(recipe, "1.5.5", old, _dav1d_like(old), {}, libs)
    assert [(d.evidence.what, d.expected) for d in stale.disagreements] == [("Version:", "1.5.5")]
    # a library whose file names another ABI than its header
    abi = tmp_path / "abi"
    moved = version_proof.prove(recipe, "1.5.4", abi, _dav1d_like(abi, so="6.9.0"), {}, libs)
    assert [(d.evidence.what, d.expected) for d in moved.disagreements] == [
        ("file name", "7.0.0")]
    # without abi: the header's 7.0.0 would be held against the .pc's release (the old rule)
    plain = Recipe("dav1d", "dav1d", version_check=VersionCheck(
        DAV1D_ABI.header, DAV1D_ABI.macros, library="dav1d"))
    assert not version_proof.prove(plain, "1.5.4", tmp_path, _dav1d_like(tmp_path), {},
                                   libs).ok
    # nothing states the release (no .pc): a failure, never "no evidence"
    bare = tmp_path / "bare"
    files = [f for f in _dav1d_like(bare) if not f.endswith(".pc")]
    none = version_proof.prove(recipe, "1.5.4", bare, files, {}, libs)
    assert none.problems == ["version_check: nothing the build installed states dav1d's "
                             "release (its header and binary state its ABI version)"]
    assert validate_recipe(Recipe("x", "x", version_check=VersionCheck(
        "a.h", ("A",), abi=True))) != []
