"""Generated CMake and pkg-config files: relocatable, link order baked in, cycles repeated.

The libraries are real archives (gcc + ar) with a dependency cycle between two of them, and the
consumers are real: CMake configures, builds and runs; pkg-config's flags link with gcc.
"""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

from prebake.package import cmake, pcdeps, pkgconfig
from prebake.package.libs import Library, ordered
from tests import support

SOURCES = {
    # ping <-> pong call each other (a cycle); base is used by pong only.
    "ping.c": "int pong(int); int ping(int n) { return n <= 0 ? 0 : 1 + pong(n - 1); }\n",
    "pong.c": "int ping(int); int base(int);\n"
              "int pong(int n) { return n <= 0 ? base(0) : 1 + ping(n - 1); }\n",
    "base.c": "int base(int n) { return n + 100; }\n",
}


def _libs() -> Path:
    return support.build("pkg-cycle", SOURCES, [
        ["gcc", "-O2", "-c", "ping.c", "pong.c", "base.c"],
        ["ar", "rcs", "libping.a", "ping.o"],
        ["ar", "rcs", "libpong.a", "pong.o"],
        ["ar", "rcs", "libbase.a", "base.o"],
    ])


LIBS = [Library("lib/libbase.a", "static"), Library("lib/libping.a", "static"),
        Library("lib/libpong.a", "static")]
ORDER = [["lib/libping.a", "lib/libpong.a"], ["lib/libbase.a"]]


def _prefix(tmp_path: Path) -> Path:
    built = _libs()
    prefix = tmp_path / "moved prefix"
    (prefix / "lib").mkdir(parents=True)
    (prefix / "include").mkdir()
    for name in ("libping.a", "libpong.a", "libbase.a"):
        shutil.copyfile(built / name, prefix / "lib" / name)
    (prefix / "include" / "pingpong.h").write_text("int ping(int);\n")
    files = {**cmake.generated_files("pingpong", "2.3.1", LIBS, ORDER, arch="x86_64", cxx=False),
             **pkgconfig.generated_files("pingpong", "2.3.1", LIBS, ORDER, os="linux")}
    for rel, data in files.items():
        (prefix / rel).parent.mkdir(parents=True, exist_ok=True)
        (prefix / rel).write_bytes(data)
    return prefix


def test_ordered_puts_unlisted_libraries_last() -> None:
    groups = ordered(LIBS, [["lib/libpong.a"]])
    assert [[lib.path for lib in g] for g in groups] == [
        ["lib/libpong.a"], ["lib/libbase.a"], ["lib/libping.a"]]


def test_stems() -> None:
    assert Library("lib/libonnxruntime.so.1.30.0", "shared").stem == "onnxruntime"
    assert Library("lib/onnxruntime.lib", "shared").stem == "onnxruntime"
    assert Library("lib/libfoo.1.2.dylib", "shared").stem == "foo"
    # a DLL is named, and linked, by its import library (FFmpeg's avcodec-61.dll)
    dll = Library("bin/avcodec-61.dll", "shared", ("lib/avcodec.lib", "lib/libavcodec.dll.a"))
    assert dll.stem == "avcodec"
    assert (dll.msvc_implib, dll.mingw_implib) == ("lib/avcodec.lib", "lib/libavcodec.dll.a")
    assert dll.link_path == "lib/libavcodec.dll.a"
    assert dll.files == ("bin/avcodec-61.dll", "lib/avcodec.lib", "lib/libavcodec.dll.a")
    assert Library("bin/x.dll", "shared", ("lib/x.lib",)).link_path == "lib/x.lib"


def test_a_dll_links_by_its_import_library_in_pkg_config() -> None:
    dll = Library("bin/avcodec-61.dll", "shared", ("lib/avcodec.lib", "lib/libavcodec.dll.a"))
    text = pkgconfig.pc_file("ffmpeg", "7.1.5", [dll], os="windows")
    assert "Libs: -L${libdir} -lavcodec\n" in text and "bindir=${prefix}/bin\n" in text
    # import libraries named apart: -l could find either, so the MinGW one by its path
    odd = Library("bin/avcodec-61.dll", "shared", ("lib/avcodec-61.lib", "lib/libavcodec.dll.a"))
    assert "Libs: -L${libdir} ${prefix}/lib/libavcodec.dll.a\n" in pkgconfig.pc_file(
        "ffmpeg", "7.1.5", [odd], os="windows")
    assert "bindir" not in pkgconfig.pc_file("pingpong", "2.3.1", LIBS, ORDER, os="linux")


def test_cmake_consumer_links_the_cycle_in_order(tmp_path: Path) -> None:
    prefix = _prefix(tmp_path)
    text = (prefix / "lib/cmake/pingpong/pingpongConfig.cmake").read_text()
    assert "/work/" not in text and str(tmp_path) not in text, "no absolute paths baked in"
    assert "IMPORTED_LINK_INTERFACE_MULTIPLICITY 3" in text
    proj = tmp_path / "consumer"
    proj.mkdir()
    (proj / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\nproject(c C)\n"
        "find_package(pingpong 2.0 CONFIG REQUIRED)\n"
        "add_executable(app main.c)\ntarget_link_libraries(app PRIVATE pingpong::pingpong)\n")
    (proj / "main.c").write_text(
        '#include <pingpong.h>\n#include <stdio.h>\nint main(void) { printf("%d\\n", ping(5));'
        " return 0; }\n")
    b = proj / "build"
    support.run(["cmake", "-S", str(proj), "-B", str(b), f"-DCMAKE_PREFIX_PATH={prefix}"],
                cwd=proj)
    support.run(["cmake", "--build", str(b)], cwd=proj)
    assert support.run([str(b / "app")], cwd=proj).stdout == "105\n"


def test_cmake_version_file_rejects_other_majors_and_pointer_sizes(tmp_path: Path) -> None:
    prefix = _prefix(tmp_path)
    for want, ok in (("2.3.1 EXACT", True), ("2.1", True), ("3.0", False), ("2.4", False)):
        proj = tmp_path / f"v-{want.replace(' ', '-')}"
        proj.mkdir()
        (proj / "CMakeLists.txt").write_text(
            "cmake_minimum_required(VERSION 3.16)\nproject(c C)\n"
            f"find_package(pingpong {want} CONFIG)\n"
            'message(STATUS "found=${pingpong_FOUND}")\n')
        out = support.run(["cmake", "-S", str(proj), "-B", str(proj / "b"),
                           f"-DCMAKE_PREFIX_PATH={prefix}"], cwd=proj).stdout
        assert f"found={'1' if ok else '0'}" in out, (want, out)
    wasm = cmake.version_file("2.3.1", "wasm32")
    assert 'NOT CMAKE_SIZEOF_VOID_P STREQUAL "4"' in wasm


def test_pkg_config_flags_link_the_cycle(tmp_path: Path) -> None:
    prefix = _prefix(tmp_path)
    env = {"PKG_CONFIG_PATH": str(prefix / "lib" / "pkgconfig")}
    flags = shlex.split(support.run(["pkg-config", "--cflags", "--libs", "pingpong"],
                                    cwd=tmp_path, env=env).stdout)
    assert flags[-5:] == ["-Wl,--start-group", "-lping", "-lpong", "-Wl,--end-group", "-lbase"]
    (tmp_path / "main.c").write_text(
        '#include <pingpong.h>\nint main(void) { return ping(5) == 105 ? 0 : 1; }\n')
    support.run(["gcc", "main.c", *flags, "-o", "app"], cwd=tmp_path)
    support.run([str(tmp_path / "app")], cwd=tmp_path)


# FFmpeg's shape: one .pc per library, each naming the libraries it requires and (static) the
# system libraries it needs; the consumer names one target and links what that one needs.
MEDIA = {
    "util.c": "#include <math.h>\ndouble util_root(double x) { return sqrt(x); }\n",
    "codec.c": "double util_root(double);\nint codec_decode(int n) { return (int)util_root(n); }\n",
    "format.c": "int codec_decode(int); double util_root(double);\n"
                "int format_open(int n) { return codec_decode(n) + (int)util_root(4.0); }\n",
    "scale.c": "double util_root(double);\nint scale_it(int n) { return 2 * (int)util_root(n); }\n",
}
MEDIA_PC = """\
prefix=/build/prefix
libdir=${{prefix}}/lib
includedir=${{prefix}}/include

Name: lib{name}
Description: {name}
Version: 1.0.0
Requires: {requires}
Libs: -L${{libdir}} -l{name} {libs}
Cflags: -I${{includedir}}
"""
MEDIA_LIBS = [Library(f"lib/lib{n}.a", "static") for n in ("format", "codec", "scale", "util")]


def _media_prefix(tmp_path: Path) -> Path:
    built = support.build("pkg-media", MEDIA, [
        ["gcc", "-O2", "-c", *MEDIA],
        *(["ar", "rcs", f"lib{n}.a", f"{n}.o"] for n in ("util", "codec", "format", "scale")),
    ])
    prefix = tmp_path / "media"
    (prefix / "lib" / "pkgconfig").mkdir(parents=True)
    (prefix / "include").mkdir()
    (prefix / "include" / "media.h").write_text("int format_open(int); int scale_it(int);\n")
    requires = {"format": "libcodec >= 1.0.0, libutil", "codec": "libutil", "scale": "libutil",
                "util": ""}
    for name, req in requires.items():
        shutil.copyfile(built / f"lib{name}.a", prefix / "lib" / f"lib{name}.a")
        (prefix / "lib" / "pkgconfig" / f"lib{name}.pc").write_text(MEDIA_PC.format(
            name=name, requires=req, libs="-lm" if name == "util" else ""))
    files = sorted(p.relative_to(prefix).as_posix() for p in prefix.rglob("*") if p.is_file())
    deps = pcdeps.read(prefix, MEDIA_LIBS, files)
    assert deps is not None
    order = [[lib.path] for lib in MEDIA_LIBS]
    generated = {**cmake.generated_files("media", "1.0.0", MEDIA_LIBS, order, arch="x86_64",
                                         cxx=False, deps=deps),
                 **pkgconfig.generated_files("media", "1.0.0", MEDIA_LIBS, order, os="linux",
                                             extra_libs=pcdeps.private_libs(
                                                 deps, [lib.path for lib in MEDIA_LIBS]))}
    for rel, data in generated.items():
        (prefix / rel).parent.mkdir(parents=True, exist_ok=True)
        (prefix / rel).write_bytes(data)
    return prefix


def test_each_target_links_what_its_own_pc_requires(tmp_path: Path) -> None:
    prefix = _media_prefix(tmp_path)
    deps = pcdeps.read(prefix, MEDIA_LIBS, [f"lib/pkgconfig/lib{n}.pc" for n in
                                            ("format", "codec", "scale", "util")])
    assert deps is not None
    assert deps["lib/libformat.a"].requires == ("lib/libcodec.a", "lib/libutil.a")
    assert deps["lib/libutil.a"].system == ("m",)
    # a library without its own .pc: the chain in link order, as before
    assert pcdeps.read(prefix, [*MEDIA_LIBS, Library("lib/libother.a", "static")],
                       [f"lib/pkgconfig/lib{n}.pc" for n in ("format", "codec", "util")]) is None
    text = (prefix / "lib/cmake/media/mediaConfig.cmake").read_text()
    assert 'INTERFACE_LINK_LIBRARIES "media::codec;media::util"' in text
    assert 'INTERFACE_LINK_LIBRARIES "m"' in text  # util's own system library
    assert "Libs.private: -lm" in (prefix / "lib/pkgconfig/media.pc").read_text()
    # the consumer names format and scale only: CMake links codec and util after them, util
    # before libm, from the graph the .pc files state
    proj = tmp_path / "consumer"
    proj.mkdir()
    (proj / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\nproject(c C)\n"
        "find_package(media CONFIG REQUIRED)\nadd_executable(app main.c)\n"
        "target_link_libraries(app PRIVATE media::format media::scale)\n")
    (proj / "main.c").write_text('#include <media.h>\n#include <stdio.h>\n'
                                 'int main(void) { printf("%d %d\\n", format_open(16),'
                                 ' scale_it(9)); return 0; }\n')
    b = proj / "build"
    support.run(["cmake", "-S", str(proj), "-B", str(b), f"-DCMAKE_PREFIX_PATH={prefix}"],
                cwd=proj)
    support.run(["cmake", "--build", str(b)], cwd=proj)
    assert support.run([str(b / "app")], cwd=proj).stdout == "6 6\n"
