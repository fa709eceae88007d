"""Windows assets: DLLs in ``bin/``, import libraries in ``lib/``, for any recipe.

A real DLL built from source by MinGW-w64 and named as FFmpeg names its own (``kiln-3.dll``,
with ``lib/libkiln.dll.a`` and ``lib/kiln.lib``: which DLL an import library serves is read from
its bytes, not its name), built, guarded and packaged by prebake; the asset's CMake package and
``.pc`` file each link a real MinGW consumer, which then runs under Wine. A recipe that breaks
the layout is refused, naming the file (``prebake.package.windows``).
"""

from __future__ import annotations

import json
import shlex
import tarfile
from pathlib import Path
from typing import Any

import pytest

from prebake.package import windows
from tests import support

MINGW_TOOLCHAIN = support.ROOT / "examples" / "flagship" / "consumer" / "mingw-w64.cmake"
ASSET = "kiln-3.1.0-windows-x86_64.tar.xz"

RECIPE = '''\
from prebake.recipes import Build, LocalSource, Outputs, Recipe, Snippet

RECIPE = Recipe(
    name="kiln",
    pin="kiln",
    sources=(LocalSource("../src/kiln"),),
    platforms={"windows-x86_64": Build(commands=(
        "cmake -E make_directory {build} {prefix}/bin {prefix}/lib {prefix}/include",
        "{cc} -O2 -shared -DKILN_BUILD {src}/kiln.c -o {prefix}/DLL_DIR/kiln-3.dll"
        " -Wl,--out-implib,{prefix}/lib/libkiln.dll.a -Wl,--output-def,{build}/kiln.def",
        "llvm-dlltool -m i386:x86-64 -d {build}/kiln.def -D kiln-3.dll -l {prefix}/lib/kiln.lib",
        "cmake -E copy {src}/kiln.h {prefix}/include/kiln.h",
        EXTRA
    ))},
    outputs=Outputs(libs={"*": LIBS}, headers=("include/kiln.h",)),
    kind={"*": "shared"},
    link_test=Snippet(code="#include <kiln.h>\\nint main(void) { return kiln_answer() != 42; }\\n",
                      lang="c", symbols=("kiln_answer",)),
)
'''
LIBS = '("bin/kiln-3.dll", "lib/kiln.lib", "lib/libkiln.dll.a")'
SOURCES = {
    "kiln.h": ("#pragma once\n#ifdef KILN_BUILD\n#define KILN_API __declspec(dllexport)\n"
               "#else\n#define KILN_API __declspec(dllimport)\n#endif\n"
               "KILN_API int kiln_answer(void);\nKILN_API const char* kiln_name(void);\n"),
    "kiln.c": ('#include "kiln.h"\nint kiln_answer(void) { return 42; }\n'
               'const char* kiln_name(void) { return "kiln"; }\n'),
    # a second DLL the recipe does not ship (its import library may end up in lib/)
    "other.c": "__declspec(dllexport) int other(void) { return 1; }\n",
}
CONSUMER = ('#include <stdio.h>\n#include <kiln.h>\n'
            'int main(void) { printf("%s says %d\\n", kiln_name(), kiln_answer());'
            " return kiln_answer() != 42; }\n")


def _workspace(ws: Path, *, dll_dir: str = "bin", libs: str = LIBS, extra: str = "") -> Path:
    (ws / "recipes").mkdir(parents=True)
    src = ws / "src" / "kiln"
    src.mkdir(parents=True)
    for name, text in SOURCES.items():
        (src / name).write_text(text)
    (ws / "prebake.toml").write_text(support.workspace_text("windows-dll"))
    (ws / "recipes" / "kiln.py").write_text(
        RECIPE.replace("DLL_DIR", dll_dir).replace("LIBS", libs).replace("EXTRA", extra))
    return ws


def _build(ws: Path) -> tuple[int, dict[str, Any]]:
    proc = support.prebake("-C", ws, "build", "--platform", "windows-x86_64", "--json")
    try:
        (unit,) = json.loads(proc.stdout)["units"]
    except ValueError:
        raise AssertionError(f"no JSON (rc {proc.returncode}): {proc.stdout}{proc.stderr}"
                             ) from None
    return proc.returncode, dict(unit)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The workspace, built once, and its asset fetched as an addon fetches it."""
    ws = _workspace(tmp_path_factory.mktemp("windows") / "ws")
    rc, unit = _build(ws)
    assert rc == 0, unit["message"]
    into = ws.parent / "asset"
    proc = support.prebake("-C", ws, "fetch", "kiln==3.1.0", "--platform", "windows-x86_64",
                           "--into", into, "--lock", ws.parent / "prebake.lock")
    assert proc.returncode == 0, proc.stderr
    return ws, into


def test_the_dll_ships_in_bin_with_its_import_libraries_in_lib(built: tuple[Path, Path]
                                                               ) -> None:
    ws, _ = built
    (asset,) = (ws / "releases").rglob(ASSET)
    with tarfile.open(asset) as tf:
        names = set(tf.getnames())
        manifest = json.loads(tf.extractfile("share/prebake/manifest.json").read())  # type: ignore[union-attr]
        config = tf.extractfile("lib/cmake/kiln/kilnConfig.cmake").read().decode()  # type: ignore[union-attr]
        pc = tf.extractfile("lib/pkgconfig/kiln.pc").read().decode()  # type: ignore[union-attr]
    assert {"bin/kiln-3.dll", "lib/kiln.lib", "lib/libkiln.dll.a"} <= names
    assert not any(n.startswith("lib/") and n.endswith(".dll") for n in names), names
    # the manifest's facts: the DLL, then its import libraries, each checked by the contract
    facts = {f["path"]: f for f in manifest["facts"]}
    assert list(facts) == ["bin/kiln-3.dll", "lib/kiln.lib", "lib/libkiln.dll.a"]
    assert facts["bin/kiln-3.dll"]["kind"] == "shared-library"
    assert facts["lib/kiln.lib"]["kind"] == facts["lib/libkiln.dll.a"]["kind"] == "import-library"
    assert manifest["link_order"] == [["bin/kiln-3.dll"]]
    # the link test linked a consumer through MinGW's import library
    assert "whole archive lib/libkiln.dll.a" in manifest["guards"]["link_test"]["linked"]
    # CMake: the DLL is the location, each compiler family gets its import library
    assert 'add_library(kiln::kiln SHARED IMPORTED)' in config
    assert 'IMPORTED_LOCATION "${_kiln_prefix}/bin/kiln-3.dll"' in config
    mingw, msvc = config.split("if(MINGW)")[1].split("else()")
    assert 'IMPORTED_IMPLIB "${_kiln_prefix}/lib/libkiln.dll.a"' in mingw
    assert 'IMPORTED_IMPLIB "${_kiln_prefix}/lib/kiln.lib"' in msvc.split("endif()")[0]
    # pkg-config: -lkiln finds lib/libkiln.dll.a (GNU ld) or lib/kiln.lib (pkgconf --msvc-syntax)
    assert "Libs: -L${libdir} -lkiln" in pc and "bindir=${prefix}/bin" in pc


def test_a_cmake_consumer_links_the_import_library_and_runs_under_wine(
        built: tuple[Path, Path], tmp_path: Path) -> None:
    """find_package on the fetched asset with MinGW-w64; the DLL CMake copies next to the
    program is the imported target's location (bin/): it runs with nothing on the DLL path."""
    _, into = built
    proj = tmp_path / "consumer"
    proj.mkdir()
    (proj / "main.c").write_text(CONSUMER)
    (proj / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.21)\nproject(c C)\n"
        "set(CMAKE_C_USE_RESPONSE_FILE_FOR_LIBRARIES OFF)\n"  # the link line in the log
        "find_package(kiln 3.1 CONFIG REQUIRED)\n"
        "add_executable(app main.c)\ntarget_link_libraries(app PRIVATE kiln::kiln)\n"
        "add_custom_command(TARGET app POST_BUILD COMMAND ${CMAKE_COMMAND} -E copy\n"
        "  $<TARGET_RUNTIME_DLLS:app> $<TARGET_FILE_DIR:app> COMMAND_EXPAND_LISTS)\n")
    support.run(["cmake", "-S", str(proj), "-B", str(tmp_path / "b"),
                 f"-DCMAKE_TOOLCHAIN_FILE={MINGW_TOOLCHAIN}", f"-DCMAKE_PREFIX_PATH={into}"],
                tmp_path)
    built_log = support.run(["cmake", "--build", str(tmp_path / "b"), "--verbose"], tmp_path)
    assert "libkiln.dll.a" in built_log.stdout, built_log.stdout  # MINGW: the .dll.a
    assert (tmp_path / "b" / "kiln-3.dll").read_bytes() == (into / "bin/kiln-3.dll").read_bytes()
    ran = support.run_windows(tmp_path / "b" / "app.exe")
    assert (ran.returncode, ran.stdout) == (0, "kiln says 42\n"), ran


def test_a_pkg_config_consumer_runs_with_the_dll_from_bin(built: tuple[Path, Path],
                                                          tmp_path: Path) -> None:
    _, into = built
    env = {"PKG_CONFIG_LIBDIR": str(into / "lib" / "pkgconfig"), "PKG_CONFIG_PATH": ""}
    flags = support.run(["pkg-config", "--cflags", "--libs", "kiln"], tmp_path, env=env)
    bindir = support.run(["pkg-config", "--variable=bindir", "kiln"], tmp_path, env=env)
    assert Path(bindir.stdout.strip()).resolve() == (into / "bin").resolve()
    (tmp_path / "main.c").write_text(CONSUMER)
    support.run(["x86_64-w64-mingw32-gcc", "main.c", *shlex.split(flags.stdout), "-o",
                 "app.exe"], tmp_path)
    ran = support.run_windows(tmp_path / "app.exe", dll_dirs=[Path(bindir.stdout.strip())])
    assert (ran.returncode, ran.stdout) == (0, "kiln says 42\n"), ran
    # without bin/ on its path Windows cannot start it, and the runner says which DLL is missing
    alone = support.run_windows(tmp_path / "app.exe")
    assert alone.returncode == 53 and alone.missing == ["kiln-3.dll (needed by app.exe)"], alone
    assert "not found: kiln-3.dll (needed by app.exe)" in alone.failure()


def test_a_windows_program_s_exit_code_passes_through_wine(tmp_path: Path) -> None:
    (tmp_path / "rc.c").write_text("int main(int argc, char** argv) { return argc + 4; }\n")
    support.run(["x86_64-w64-mingw32-gcc", "rc.c", "-o", "rc.exe"], tmp_path)
    ran = support.run_windows(tmp_path / "rc.exe", "a", "b")
    assert ran.returncode == 7 and ran.stderr == "", ran


OTHER_IMPLIB = (
    '"{cc} -shared {src}/other.c -o {build}/other-1.dll'
    ' -Wl,--out-implib,{prefix}/lib/libother.dll.a",')


@pytest.mark.parametrize(("dll_dir", "libs", "extra", "said"), [
    ("lib", '("lib/kiln-3.dll", "lib/kiln.lib", "lib/libkiln.dll.a")', "",
     "lib/kiln-3.dll: a DLL ships in bin/ (Windows finds a DLL next to the program or on "
     "PATH, and CMake's RUNTIME DESTINATION, vcpkg and Conan install it in bin/): put it in "
     "bin/kiln-3.dll"),
    ("bin", LIBS, '"cmake -E copy {prefix}/bin/kiln-3.dll {prefix}/lib/kiln-3.dll",',
     "lib/kiln-3.dll: a DLL in lib/; it ships in bin/"),
    ("bin", '("bin/kiln-3.dll",)', "",
     "bin/kiln-3.dll: no import library among the outputs"),
    ("bin", '("bin/kiln-3.dll", "lib/libkiln.dll.a", "lib/libother.dll.a")', OTHER_IMPLIB,
     "lib/libother.dll.a: the import library of other-1.dll, which the outputs do not ship"),
], ids=["declared-in-lib", "left-in-lib", "no-import-library", "implib-of-another-dll"])
def test_a_recipe_that_breaks_the_layout_is_refused(tmp_path: Path, dll_dir: str, libs: str,
                                                    extra: str, said: str) -> None:
    ws = _workspace(tmp_path / "ws", dll_dir=dll_dir, libs=libs, extra=extra)
    rc, unit = _build(ws)
    assert rc == 1 and unit["state"] == "failed", unit
    assert "kiln: the windows-x86_64 layout is wrong:" in unit["message"], unit["message"]
    assert said in unit["message"], unit["message"]
    assert not (ws / "releases").exists() or not list((ws / "releases").rglob("*.tar.xz"))


def test_import_libraries_are_paired_by_the_dll_they_name(tmp_path: Path) -> None:
    """``windows.pair`` reads the DLL name from each import library (binutils' and
    llvm-dlltool's formats), so a library whose file name says nothing is still paired; a
    static ``.lib`` is a library of its own."""
    (tmp_path / "kiln.c").write_text(SOURCES["kiln.c"])
    (tmp_path / "kiln.h").write_text(SOURCES["kiln.h"])
    (tmp_path / "bin").mkdir()
    (tmp_path / "lib").mkdir()
    support.run(["x86_64-w64-mingw32-gcc", "-shared", "-DKILN_BUILD", "kiln.c", "-o",
                 "bin/kiln-3.dll", "-Wl,--out-implib,lib/libunrelated.dll.a",
                 "-Wl,--output-def,kiln.def"], tmp_path)
    support.run(["llvm-dlltool", "-m", "i386:x86-64", "-d", "kiln.def", "-D", "kiln-3.dll",
                 "-l", "lib/whatever.lib"], tmp_path)
    support.run(["x86_64-w64-mingw32-gcc", "-c", "-DKILN_BUILD", "kiln.c", "-o", "kiln.o"],
                tmp_path)
    support.run(["x86_64-w64-mingw32-ar", "rcs", "lib/static.lib", "kiln.o"], tmp_path)
    got = windows.pair(["bin/kiln-3.dll", "lib/libunrelated.dll.a", "lib/whatever.lib",
                        "lib/static.lib"], tmp_path)
    assert got.problems == []
    assert got.dlls == {"bin/kiln-3.dll": ("lib/whatever.lib", "lib/libunrelated.dll.a")}
    assert got.others == ["lib/static.lib"]
