"""The CMake toolchain file's rules at small scale (the cross builds that prove it work are in
tests/integration/test_cmake_toolchain.py): what each platform's table turns into, and the
tables that cannot make one."""

from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path

import pytest

from prebake.toolchain.cmakefile import ToolchainFileError, for_unit, portable
from prebake.toolchain.platformtools import beside_ar
from prebake.workspace import load_workspace
from tests import support

EXAMPLE = support.ROOT / "examples" / "sdk"


@pytest.fixture(scope="module")
def ws():  # type: ignore[no-untyped-def]
    return load_workspace(EXAMPLE)


def ranlib_for(ar: tuple[str, ...]) -> tuple[str, ...] | None:
    return beside_ar(ar, "ranlib")


def test_ranlib_is_found_beside_ar() -> None:
    assert ranlib_for(("ar",)) == ("ranlib",)
    assert ranlib_for(("emar",)) == ("emranlib",)
    assert ranlib_for(("x86_64-w64-mingw32-ar",)) == ("x86_64-w64-mingw32-ranlib",)
    assert ranlib_for(("/usr/bin/llvm-ar-14",)) == ("/usr/bin/llvm-ranlib-14",)
    assert ranlib_for(("python3", "-m", "ziglang", "ar")) == ("python3", "-m", "ziglang",
                                                              "ranlib")
    assert ranlib_for(("lib.exe",)) is None


def test_a_zig_cross_platform_gets_system_processor_wrappers_and_find_roots(ws) -> None:  # type: ignore[no-untyped-def]
    text = portable(ws.platforms["linux-aarch64"], shared_prefix=False, cross=True).rendered()
    assert "set(CMAKE_SYSTEM_NAME Linux)\nset(CMAKE_SYSTEM_PROCESSOR aarch64)\n" in text
    # several words (python -m ziglang cc -target …) become one wrapper path each
    assert 'set(CMAKE_C_COMPILER "{work}/toolchain/bin/zig-cc")' in text
    # the work folder and zig's own (its libc++ headers, in the Python environment) mapped out
    assert ("exec '{python}' -m ziglang cc -target aarch64-linux-gnu.2.28 "
            "'-ffile-prefix-map={work}=.' '-ffile-prefix-map={toolchain_lib}=/zig/lib' \"$@\""
            ) in text
    assert 'set(CMAKE_AR "{work}/toolchain/bin/zig-ar" CACHE FILEPATH "" FORCE)' in text
    assert "exec '{python}' -m ziglang ranlib \"$@\"" in text
    assert 'list(PREPEND CMAKE_FIND_ROOT_PATH "{prefix}" "{deps_prefix}")' in text
    assert "set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)" in text
    assert "set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)" in text
    assert "LAUNCHER" not in text  # zig caches its own work
    # zig reads -march as -mcpu on ARM: its compiler wrappers rewrite GCC's spelling, ar's not
    assert text.count("-march=armv*) a=-mcpu=generic+") == 2


def test_the_march_rewrite_speaks_zig() -> None:
    """The wrapper's rewrite, run by /bin/sh on the spellings onnxruntime's MLAS and XNNPACK
    use; other arguments (spaces included) pass unchanged."""
    import subprocess

    from prebake.toolchain.shellscript import MARCH_WRAPPER

    script = MARCH_WRAPPER + "exec printf '%s\\n' \"$@\"\n"
    args = ["-O2", "-march=armv8.2-a+dotprod", "-march=armv8.2-a+fp16",
            "-march=armv8.2-a+i8mm+fp16", "-march=armv8-a", "-march=armv8.2-a+fp16fml+nofp16",
            "-march=armv8.2-a+sve+sve2", "a b", "-march=x86-64-v2"]
    out = subprocess.run(["sh", "-c", script, "sh", *args], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert out == ["-O2", "-mcpu=generic+v8_2a+dotprod", "-mcpu=generic+v8_2a+fullfp16",
                   "-mcpu=generic+v8_2a+i8mm+fullfp16", "-mcpu=generic+v8a",
                   "-mcpu=generic+v8_2a+fp16fml-fullfp16", "-mcpu=generic+v8_2a+sve+sve2",
                   "a b", "-march=x86-64-v2"]


def test_a_recipe_recording_cmake_entries_names_the_cache() -> None:
    from prebake.recipes import Build, Recipe, validate_recipe

    bad = Recipe(name="x", pin="x", platforms={
        "*": Build(commands=("cmake --version",), record=("CMAKE_BUILD_TYPE",))})
    assert any(p.message.startswith("names CMake cache entries but no cmake_cache")
               for p in validate_recipe(bad))
    typo = Recipe(name="x", pin="x", platforms={
        "*": Build(commands=("cmake --version",), cmake_cache="{biuld}/CMakeCache.txt",
                   record=("CMAKE_BUILD_TYPE",))})
    assert any("biuld" in p.message for p in validate_recipe(typo))


def test_a_native_platform_stays_native(ws) -> None:  # type: ignore[no-untyped-def]
    text = portable(ws.platforms["linux-x86_64"], shared_prefix=True, cross=False).text
    assert "CMAKE_SYSTEM_NAME" not in text and "CMAKE_FIND_ROOT_PATH" not in text
    rendered = portable(ws.platforms["linux-x86_64"], shared_prefix=True, cross=False).rendered()
    assert "-mcpu=" not in rendered  # an x86_64 compiler's -march is its own


def test_macos_gets_arm64_and_the_contract_minimum(ws) -> None:  # type: ignore[no-untyped-def]
    text = portable(ws.platforms["macos-arm64"], shared_prefix=False, cross=True).text
    assert "set(CMAKE_SYSTEM_PROCESSOR arm64)" in text
    assert 'set(CMAKE_OSX_DEPLOYMENT_TARGET 13.3 CACHE STRING "")' in text


@pytest.mark.skipif(shutil.which("x86_64-w64-mingw32-gcc") is None or
                    shutil.which("ccache") is None, reason="needs mingw-w64 and ccache")
def test_mingw_for_this_machine_resolves_tools_launcher_and_sysroot(ws, tmp_path: Path  # type: ignore[no-untyped-def]
                                                                     ) -> None:
    made = for_unit(ws.platforms["windows-x86_64"], work_root=tmp_path, prefix=tmp_path / "p",
                    deps=tmp_path / "d", env=dict(os.environ), launcher=shutil.which("ccache"),
                    workspace_root=ws.root, cross=True)
    assert f'set(CMAKE_AR "{shutil.which("x86_64-w64-mingw32-ar")}"' in made.text
    assert f'set(CMAKE_C_COMPILER_LAUNCHER "{shutil.which("ccache")}")' in made.text
    assert '"/usr/x86_64-w64-mingw32")' in made.text
    assert "CMAKE_RC_COMPILER" in made.text
    path = made.write(tmp_path / "toolchain")
    wrapper = tmp_path / "toolchain" / "bin" / "x86_64-w64-mingw32-gcc"
    assert path.is_file() and os.access(wrapper, os.X_OK)
    assert wrapper.stat().st_mtime == 315532800  # ccache's compiler_check=mtime keeps its hits
    # the same inputs write the same bytes
    again = for_unit(ws.platforms["windows-x86_64"], work_root=tmp_path, prefix=tmp_path / "p",
                     deps=tmp_path / "d", env=dict(os.environ),
                     launcher=shutil.which("ccache"), workspace_root=ws.root, cross=True)
    assert again == made


def test_an_os_without_a_cmake_system_name_is_one_clear_error(ws) -> None:  # type: ignore[no-untyped-def]
    bare = dataclasses.replace(ws.platforms["linux-aarch64"], name="bare", os="none")
    with pytest.raises(ToolchainFileError, match=r"^platform bare: os 'none' has no CMake "
                                                 r"system name"):
        portable(bare, shared_prefix=False, cross=True)


def test_a_missing_ar_is_one_clear_error(ws, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    p = ws.platforms["windows-x86_64"]
    p = dataclasses.replace(p, toolchain=dataclasses.replace(p.toolchain,
                                                             ar=("nowhere-w64-mingw32-ar",)))
    if shutil.which("x86_64-w64-mingw32-gcc") is None:
        pytest.skip("needs mingw-w64")
    with pytest.raises(ToolchainFileError, match="ar 'nowhere-w64-mingw32-ar' is not on the "
                                                 "build's PATH"):
        for_unit(p, work_root=tmp_path, prefix=tmp_path, deps=tmp_path, env=dict(os.environ),
                 launcher=None, workspace_root=ws.root)


def test_an_ar_with_no_ranlib_rule_asks_for_ranlib(ws) -> None:  # type: ignore[no-untyped-def]
    p = ws.platforms["windows-x86_64"]
    p = dataclasses.replace(p, toolchain=dataclasses.replace(p.toolchain, ar=("lib.exe",)))
    with pytest.raises(ToolchainFileError, match=r"set ranlib in \[platforms.windows-x86_64"):
        portable(p, shared_prefix=False, cross=True)


def test_prebake_toolchain_cmake_shows_the_hashed_file(capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    from prebake.cli import main

    rc = main(["-C", str(EXAMPLE), "toolchain", "cmake", "--platform", "windows-x86_64"])
    out = capsys.readouterr().out
    assert rc == 0
    assert out.startswith("# ==== platform windows-x86_64 (cross) ====\n")
    assert "set(CMAKE_SYSTEM_NAME Windows)" in out
    assert "# ---- bin/x86_64-w64-mingw32-gcc ----" in out


def test_the_input_hash_follows_the_generated_file(ws) -> None:  # type: ignore[no-untyped-def]
    from prebake.plan.hashing import cmake_toolchain_inputs

    p = ws.platforms["linux-aarch64"]
    one = cmake_toolchain_inputs(p, False, ws.root)
    other = dataclasses.replace(p, arch="x86_64")
    assert one != cmake_toolchain_inputs(other, False, ws.root)
    assert one == cmake_toolchain_inputs(p, False, ws.root)


def test_host_tool_declarations_are_checked_at_load() -> None:
    from prebake.recipes import Build, HostTool, Recipe, validate_recipe

    bad = Recipe(name="x", pin="x", host_tools=(HostTool("protoc", "latest"),
                                                HostTool("flatc", "23.5.26", version_pattern="v")),
                 platforms={"*": Build(commands=("{host_tools[protc]} --version",))})
    messages = [p.message for p in validate_recipe(bad)]
    assert "names no release: 'latest'" in messages
    assert "needs a group: the release the tool reports" in messages
    assert any(m.startswith("{host_tools[protc]} names no host tool of this recipe")
               and "declared: protoc, flatc" in m for m in messages)


def test_build_refuses_the_appleclang_leg_here_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """On Linux there is no Xcode: the macos-arm64 leg is refused before anything runs, and
    never built with another compiler."""
    from prebake.cli import main
    from prebake.toolchain.platformtools import host

    if host()[0] == "macos":
        pytest.skip("this machine has Xcode")
    ws = tmp_path / "sdk"
    shutil.copytree(EXAMPLE, ws, ignore=shutil.ignore_patterns("releases", ".prebake"))
    rc = main(["-C", str(ws), "build", "--stage", "extra", "--platform", "macos-arm64"])
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if x.strip()]
    assert rc == 2 and len(lines) == 1, err
    assert ("platform macos-arm64: AppleClang (Xcode, via xcrun) runs only on macos with "
            "Xcode's macOS SDK") in lines[0]
    assert ("(refusing onnxruntime/macos-arm64, ffmpeg/macos-arm64, dav1d/macos-arm64)"
            in lines[0])
    assert not (ws / ".prebake" / "work").exists() and not (ws / "releases").exists()


def test_the_coreml_leg_refuses_a_zig_platform(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """A workspace whose macos-arm64 compiler is zig does not get a CoreML build from zig."""
    from prebake.cli import main

    ws = tmp_path / "sdk"
    shutil.copytree(EXAMPLE, ws, ignore=shutil.ignore_patterns("releases", ".prebake"))
    toml = ws / "prebake.toml"
    toml.write_text(toml.read_text().replace(
        'cc = "xcrun clang"\ncxx = "xcrun clang++"\nar = "xcrun ar"\npin = "appleclang"',
        'cc = "{python} -m ziglang cc -target aarch64-macos.13.3"\n'
        'cxx = "{python} -m ziglang c++ -target aarch64-macos.13.3"\n'
        'ar = "{python} -m ziglang ar"\nnm = "nm"\nstrip = "strip"\npin = "zig"'))
    rc = main(["-C", str(ws), "build", "--stage", "extra", "--platform", "macos-arm64"])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert ("onnxruntime/macos-arm64: builds only with AppleClang (Xcode, via xcrun) (CoreML "
            "and the Apple frameworks come with Xcode's macOS SDK); the platform's compiler is "
            "zig") in err
    assert not (ws / ".prebake" / "work").exists()
