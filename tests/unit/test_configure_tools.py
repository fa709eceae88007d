"""The tools folder a configure script builds with (``prebake.toolchain.configure``): the
binutils beside ``ar``, the one-word wrappers, the refusers under the names a script falls back
to, pkg-config confined to the unit's folders, the portable text the input hash reads, an
``nm`` proven to read the target's objects with the real compilers, and a configure log's last
error in one line."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from prebake.contract import Contract
from prebake.model.workspace import Platform, Toolchain
from prebake.toolchain import configure
from prebake.toolchain.platformtools import beside_ar

ZIG = (sys.executable, "-m", "ziglang")


def platform(name: str, os_name: str, arch: str, cc: tuple[str, ...], cxx: tuple[str, ...],
             ar: tuple[str, ...], **tools: tuple[str, ...]) -> Platform:
    return Platform(name, os_name, arch, Toolchain(cc, cxx, ar, **tools), Contract())


MINGW = platform("windows-x86_64", "windows", "x86_64", ("x86_64-w64-mingw32-gcc",),
                 ("x86_64-w64-mingw32-g++",), ("x86_64-w64-mingw32-ar",))
ZIG_ARM = platform("linux-aarch64", "linux", "aarch64",
                   (*ZIG, "cc", "-target", "aarch64-linux-gnu.2.28"),
                   (*ZIG, "c++", "-target", "aarch64-linux-gnu.2.28"), (*ZIG, "ar"))
GCC = platform("linux-x86_64", "linux", "x86_64", ("gcc",), ("g++",), ("ar",))


@pytest.mark.parametrize(("ar", "tool", "want"), [
    (("x86_64-w64-mingw32-ar",), "nm", ("x86_64-w64-mingw32-nm",)),
    (("x86_64-w64-mingw32-ar",), "windres", ("x86_64-w64-mingw32-windres",)),
    (("/usr/bin/emar",), "nm", ("/usr/bin/emnm",)),
    (("emar",), "strip", ("emstrip",)),
    (("llvm-ar-14",), "nm", ("llvm-nm-14",)),
    (("xcrun", "ar"), "strip", ("xcrun", "strip")),
    (("ar",), "nm", ("nm",)),
    ((*ZIG, "ar"), "ranlib", (*ZIG, "ranlib")),
    ((*ZIG, "ar"), "nm", None),  # zig's driver has no nm: a table must name one
    ((*ZIG, "ar"), "strip", None),
    (("lib.exe",), "nm", None),
])
def test_the_binutils_beside_ar(ar: tuple[str, ...], tool: str,
                                want: tuple[str, ...] | None) -> None:
    assert beside_ar(ar, tool) == want


def test_one_word_per_tool_named_by_the_triple() -> None:
    words = configure.words(ZIG_ARM, ["nasm"])
    assert words["cc"] == "aarch64-linux-gnu-cc" and words["cxx"] == "aarch64-linux-gnu-c++"
    assert words["pkg_config"] == "aarch64-linux-gnu-pkg-config" and words["nasm"] == "nasm"
    assert configure.triples(MINGW)["triple"] == "x86_64-w64-mingw32"
    wasm = platform("wasm", "emscripten", "wasm32", ("emcc",), ("em++",), ("emar",))
    assert configure.words(wasm)["nm"] == "wasm32-unknown-emscripten-nm"


def test_a_role_the_platform_does_not_pin_is_refused_naming_the_key() -> None:
    with pytest.raises(configure.ToolsError, match=r"linux-aarch64 pins no nm: .*set nm in "
                       r"\[platforms.linux-aarch64.toolchain\]"):
        configure.portable(ZIG_ARM, named=["cc", "nm"])
    with pytest.raises(configure.ToolsError, match="not a Windows platform"):
        configure.portable(GCC, named=["windres"])
    named = replace(ZIG_ARM, toolchain=replace(ZIG_ARM.toolchain, nm=("llvm-nm",)))
    assert "exec llvm-nm" in configure.portable(named, named=["nm"]).scripts[
        "aarch64-linux-gnu-nm"]


def test_refusers_stand_under_every_generic_name_the_platform_does_not_pin() -> None:
    made = configure.portable(MINGW)
    mingw = made.scripts
    for name in ("gcc", "cc", "c++", "g++", "clang", "nm", "ar", "ranlib", "strip", "windres",
                 "cpp", "as", "ld", "ld.lld", "wasm-ld", "clang-cl"):
        assert name in made.refused and name not in mingw, name
    assert f"exit {configure.REFUSED_EXIT}" in configure.refuser("gcc", "windows-x86_64")
    assert "x86_64-w64-mingw32-gcc" in mingw["x86_64-w64-mingw32-cc"]
    assert mingw["x86_64-w64-mingw32-gcc"] == mingw["x86_64-w64-mingw32-cc"]  # autoconf's name
    native = configure.portable(GCC)
    # the platform pins gcc, g++, ar, ranlib, nm, strip by those very names: a fallback to one
    # of them is a fallback to the pinned tool, never refused
    for name in ("gcc", "g++", "ar", "nm", "strip", "ranlib"):
        assert name not in native.scripts and name not in native.refused, name
    assert "cc" in native.refused and "clang" in native.refused


def test_the_portable_text_names_no_folder_of_this_machine() -> None:
    named = replace(ZIG_ARM, toolchain=replace(ZIG_ARM.toolchain, nm=("llvm-nm",)))
    text = configure.portable(named, named=["cc", "nm", "nasm"], host_tools=["nasm"]).rendered()
    assert sys.executable not in text and str(Path.cwd()) not in text
    # the work folder and zig's own (its libc++ headers) mapped out, as for this machine
    assert "exec '{python}' -m ziglang cc -target aarch64-linux-gnu.2.28 " \
           "'-ffile-prefix-map={work}=.' '-ffile-prefix-map={toolchain_lib}=/zig/lib' " \
           "\"$@\"" in text
    assert "exec '{host_tools[nasm]}'" in text
    assert "PKG_CONFIG_LIBDIR='{prefix}/lib/pkgconfig:{prefix}/share/pkgconfig:" \
           "{deps_prefix}/lib/pkgconfig:{deps_prefix}/share/pkgconfig'" in text
    # zig reads -march as -mcpu on ARM: the compiler wrappers rewrite GCC's spelling
    assert "-march=armv*" in configure.portable(named).scripts["aarch64-linux-gnu-cc"]


def write_folder(tmp: Path, plat: Platform, named: list[str]) -> tuple[Path, dict[str, str]]:
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root"), "LC_ALL": "C"}
    made = configure.for_unit(plat, named=named, host_tools={}, env=env, launcher=None,
                              flags=(f"-ffile-prefix-map={tmp}=.",), prefix=tmp / "prefix",
                              deps=tmp / "deps")
    folder = made.write(configure.tools_folder(tmp))
    return folder, {**env, "PATH": configure.path_with(tmp, env["PATH"])}


@pytest.mark.skipif(shutil.which("x86_64-w64-mingw32-gcc") is None, reason="needs mingw-w64")
def test_a_fallback_hits_a_refuser_that_names_the_program(tmp_path: Path) -> None:
    folder, env = write_folder(tmp_path, MINGW, ["cc", "nm"])
    proc = subprocess.run(["gcc", "--version"], env=env, capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 127
    assert "prebake: 'gcc' is not a tool platform windows-x86_64 pins" in proc.stderr
    # the pinned compiler answers under its one word, the prefix map inside its script
    ok = subprocess.run(["x86_64-w64-mingw32-cc", "-dumpmachine"], env=env,
                        capture_output=True, text=True, check=False)
    assert ok.returncode == 0 and ok.stdout.strip() == "x86_64-w64-mingw32"
    assert f"-ffile-prefix-map={tmp_path}=." in (folder / "x86_64-w64-mingw32-cc").read_text()


@pytest.mark.skipif(shutil.which("pkg-config") is None, reason="needs pkg-config")
def test_pkg_config_finds_the_units_folders_and_never_the_build_machines(tmp_path: Path
                                                                         ) -> None:
    (tmp_path / "deps" / "lib" / "pkgconfig").mkdir(parents=True)
    (tmp_path / "deps" / "lib" / "pkgconfig" / "dep.pc").write_text(
        "Name: dep\nDescription: d\nVersion: 1.0\nLibs: -ldep\n")
    env = write_folder(tmp_path, MINGW, ["pkg_config"])[1]
    env["PKG_CONFIG_PATH"] = "/usr/lib/x86_64-linux-gnu/pkgconfig"  # what a caller may export

    def pc(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["x86_64-w64-mingw32-pkg-config", *args], env=env,
                              capture_output=True, text=True, check=False)

    assert pc("--libs", "dep").stdout.strip() == "-ldep"
    assert pc("--exists", "zlib").returncode != 0  # the build machine's own .pc files


def test_nm_is_proven_to_read_the_targets_objects(tmp_path: Path) -> None:
    gcc_nm = replace(GCC, toolchain=replace(GCC.toolchain, nm=("nm",)))
    folder, env = write_folder(tmp_path / "ok", gcc_nm, ["cc", "nm"])
    assert configure.prove_nm(folder, gcc_nm, env) == \
        "x86_64-linux-gnu-nm reads the target's objects (prebake_nm_probe)"
    # an nm that cannot read the format prints nothing for it: FFmpeg's configure would take
    # an empty symbol prefix without a word; prebake refuses before configure runs
    blind = tmp_path / "blind-nm"
    blind.write_text("#!/bin/sh\necho \"$1: file format not recognized\" >&2\nexit 1\n")
    blind.chmod(0o755)
    bad = replace(GCC, toolchain=replace(GCC.toolchain, nm=(str(blind),)))
    folder, env = write_folder(tmp_path / "bad", bad, ["cc", "nm"])
    with pytest.raises(configure.ToolsError, match=r"its nm \(x86_64-linux-gnu-nm\) does not "
                       r"read the target's objects: prebake_nm_probe is prebake_nm_probe in "
                       r"them, nm printed 'probe.o: file format not recognized' \(exit 1\)"):
        configure.prove_nm(folder, bad, env)


AUTOCONF_LOG = """\
configure:2966: checking for x86_64-w64-mingw32-gcc
configure:2983: found /usr/bin/x86_64-w64-mingw32-gcc
configure:3340: x86_64-w64-mingw32-gcc -fno-such-flag   conftest.c  >&5
x86_64-w64-mingw32-gcc: error: unrecognized command-line option '-fno-such-flag'
configure:3344: $? = 1
configure:3384: error: in `/build':
configure:3386: error: C compiler cannot create executables
See `config.log' for more details

## ---------------- ##
## Cache variables. ##
## ---------------- ##

ac_cv_env_CC_set=set
configure: exit 77
"""
FFMPEG_LOG = """\
check_cc -fno-such-flag-xyz
test_cc
BEGIN /tmp/ffconf.H2FDzqs7/test.c
    1	int main(void){ return 0; }
END /tmp/ffconf.H2FDzqs7/test.c
gcc -fno-such-flag-xyz -c -o /tmp/ffconf.H2FDzqs7/test.o /tmp/ffconf.H2FDzqs7/test.c
gcc: error: unrecognized command-line option '-fno-such-flag-xyz'
C compiler test failed.
"""


def test_a_configure_logs_last_error_in_one_line() -> None:
    assert configure.last_error(AUTOCONF_LOG) == (
        "C compiler cannot create executables (x86_64-w64-mingw32-gcc: error: unrecognized "
        "command-line option '-fno-such-flag')")
    assert configure.last_error(FFMPEG_LOG) == (
        "C compiler test failed. (gcc: error: unrecognized command-line option "
        "'-fno-such-flag-xyz')")
    assert configure.last_error("") == "its log is empty"


def test_a_recipe_names_only_tools_that_exist() -> None:
    from prebake.recipes import Build, HostTool, Recipe, VersionString, validate_recipe

    recipe = Recipe("x", "x", host_tools=(HostTool("nasm", "2.16"),), platforms={"*": Build(
        commands=("{src}/configure --cc={tools[cc]} --as={tools[nasm]} --ld={tools[ld]}",
                  "make {tools}"),
        import_libs={"lib/x.dll": ("lib/x.a",)})},
        version_check=VersionString("no group here"))
    problems = [p.message for p in validate_recipe(recipe)]
    assert any("{tools[ld]} is neither a tool of the platform (cc, cxx, ar, ranlib, nm, "
               "strip, windres, pkg_config) nor a host tool of this recipe (declared: nasm)"
               in m for m in problems), problems
    assert "write tools as {tools[NAME]}; got {tools}" in problems
    assert any("the key is a DLL in bin/" in m for m in problems)
    assert any("an import library is lib/NAME.lib (MSVC) or lib/libNAME.dll.a" in m
               for m in problems)
    assert "needs a group: the release it spells" in problems
