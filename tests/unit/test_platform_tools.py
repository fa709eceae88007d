"""One platform-tools value, three renderings: every platform of the example workspaces
(examples/flagship, examples/sdk) and of the test workspaces (tests/data/workspaces/templates)
rendered as the CMake toolchain file, the configure tools folder and the Meson machine file
from ONE ``PlatformTools``, and the three held to agree: the same command for every tool, the
same ABI flags, the same pkg-config roots, cross exactly when the value says so. Then what the
twins used to get wrong or never said: ``windres``, the MSVC runtime; and CMake's quoting,
read back by CMake itself."""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from prebake.intake import load_workspace
from prebake.meson.quote import meson_array
from prebake.model.workspace import Platform, Workspace
from prebake.toolchain import cmakefile, configure, mesonfile, platformtools, shellscript
from prebake.toolchain.platformtools import PlatformTools
from tests import support

TEMPLATES = ("host-tools", "cmake-cross", "windows-dll", "guarded")
# role -> the CMake variable that names it (Emscripten's own module names them on wasm)
CMAKE_VARIABLES = {"cc": "CMAKE_C_COMPILER", "cxx": "CMAKE_CXX_COMPILER", "ar": "CMAKE_AR",
                   "ranlib": "CMAKE_RANLIB", "nm": "CMAKE_NM", "strip": "CMAKE_STRIP",
                   "windres": "CMAKE_RC_COMPILER", "pkg_config": "PKG_CONFIG_EXECUTABLE"}


def _template_workspace(name: str, folder: Path) -> Workspace:
    """A template's workspace with its stages left out (their recipes are the tests')."""
    if name == "linux-gcc":
        text = support.gcc_workspace("agree", 'a = "1"', "s", '["a"]')
    else:
        text = support.workspace_text(name, contract_extra="")
    text = re.sub(r"(?ms)^\[(?:stages|aliases)\.[^\n]*\n.*?(?=^\[(?!stages|aliases)|\Z)", "",
                  text)
    folder.mkdir(parents=True)
    (folder / "prebake.toml").write_text(text)
    return load_workspace(folder)


def _platforms(tmp: Path) -> list[tuple[str, Platform]]:
    out = []
    for example in ("flagship", "sdk"):
        ws = load_workspace(support.ROOT / "examples" / example)
        out += [(f"{example}:{n}", p) for n, p in ws.platforms.items()]
    for name in (*TEMPLATES, "linux-gcc"):
        ws = _template_workspace(name, tmp / name)
        out += [(f"{name}:{n}", p) for n, p in ws.platforms.items()]
    return out


@pytest.fixture(scope="module")
def platforms(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, Platform]]:
    return _platforms(tmp_path_factory.mktemp("ws"))


def _named_by_cmake(text: str, wrappers: dict[str, str], variable: str) -> tuple[str, ...]:
    """The command a CMake variable names: its one word, or what its wrapper execs."""
    m = re.search(rf'^set\({variable} "([^"]*)"', text, re.M)
    assert m, f"{variable} not set"
    word = m[1]
    name = word.rsplit("/bin/", 1)[-1]
    if word.startswith("{work}/toolchain/bin/") and name in wrappers:
        return _execs(wrappers[name])
    return (word,)


def _execs(script: str) -> tuple[str, ...]:
    import shlex

    line = next(x for x in script.splitlines() if x.startswith("exec "))
    return tuple(shlex.split(line)[1:-1])  # without "$@"


def _meson_binaries(text: str) -> dict[str, str]:
    section = text.split("[binaries]\n", 1)[1].split("\n\n", 1)[0]
    return dict(line.split(" = ", 1) for line in section.splitlines())


def _agree(pt: PlatformTools) -> None:
    cm = cmakefile.render(pt)
    me = mesonfile.render(pt)
    folder = configure.render(pt)
    binaries = _meson_binaries(me.text)
    triple = configure.triple(pt.platform.os, pt.platform.arch)
    assert set(binaries) == {mesonfile.BINARIES[r] for r in pt.tools}  # only pinned tools
    for role, argv in pt.tools.items():
        # Meson: the command's words, or the wrapper that runs them (zig on ARM)
        spelled = binaries[mesonfile.BINARIES[role]]
        if spelled != meson_array(argv):
            (name,) = re.fullmatch(r"\['\{work\}/toolchain/bin/([^']+)'\]", spelled).groups()  # type: ignore[union-attr]
            assert _execs(me.wrappers[name]) == argv, role
        # CMake: the same command (Emscripten's own module names the wasm tools)
        if pt.emscripten is None:
            assert _named_by_cmake(cm.text, dict(cm.wrappers), CMAKE_VARIABLES[role]) == argv
        # configure: the one word on PATH runs the same command (compilers with the ABI flags)
        if role != "pkg_config":
            want = (*argv, *pt.abi_flags) if role in ("cc", "cxx") else argv
            word = f"{triple}-{configure.ROLES[role]}"
            assert _execs(folder.scripts[word]) == want, (role, word)
    # the roles the platform does not pin are named by none of the three
    for role in set(platformtools.ROLES) - set(pt.tools):
        assert f"{triple}-{configure.ROLES[role]}" not in folder.scripts
        assert CMAKE_VARIABLES[role] not in cm.text
    # the ABI flags: Meson's c_args and link args, CMake's FLAGS_INIT, configure's compilers
    options = me.text.split("[built-in options]\n", 1)[1]
    for key in ("c_args", "cpp_args", "c_link_args", "cpp_link_args"):
        assert f"{key} = {meson_array(pt.abi_flags)}\n" in options
    if pt.abi_flags:
        assert f'set(CMAKE_C_FLAGS_INIT "{" ".join(pt.abi_flags)}")' in cm.text
        assert f'set(CMAKE_SHARED_LINKER_FLAGS_INIT "{" ".join(pt.abi_flags)}")' in cm.text
    else:
        assert "FLAGS_INIT" not in cm.text
    # pkg-config searches the unit's roots only, in all three
    dirs = ":".join(pt.pkg_config_dirs())
    assert f"pkg_config_libdir = {meson_array(pt.pkg_config_dirs())}" in me.text
    assert f'set(ENV{{PKG_CONFIG_LIBDIR}} "{dirs}")' in cm.text
    assert f"PKG_CONFIG_LIBDIR={dirs}" in folder.scripts["pkg-config"] or \
        f"PKG_CONFIG_LIBDIR='{dirs}'" in folder.scripts["pkg-config"]
    # cross exactly when the value says so
    assert me.cross is pt.cross and ("[host_machine]" in me.text) is pt.cross
    assert me.name == ("meson-cross.ini" if pt.cross else "meson-native.ini")
    if pt.emscripten is None:
        assert ("CMAKE_SYSTEM_NAME" in cm.text) is pt.cross
    if pt.cross:
        assert f"cpu_family = '{pt.machine.cpu_family}'" in me.text


def test_every_example_platform_renders_three_ways_that_agree(
        platforms: list[tuple[str, Platform]]) -> None:
    seen = {p.os for _, p in platforms}
    assert {"emscripten", "linux", "windows", "macos"} <= seen and len(platforms) >= 15
    for where, p in platforms:
        for cross in (True, False):
            pt = platformtools.portable(p, cross=cross)
            try:
                _agree(pt)
            except AssertionError as exc:
                raise AssertionError(f"{where} (cross={cross}): {exc}") from exc


def test_the_wasm_abi_flags_are_stated_once_from_the_contract(
        platforms: list[tuple[str, Platform]]) -> None:
    flagship = dict(platforms)["flagship:wasm"]
    assert platformtools.abi_flags(flagship) == (
        "-fwasm-exceptions", "-sWASM_LEGACY_EXCEPTIONS=0", "-pthread", "-msimd128")
    # the flags the flagship's consumers link with are the contract's, and more
    assert set(platformtools.abi_flags(flagship)) <= set(flagship.link_test.flags)
    legacy = dataclasses.replace(flagship, contract=dataclasses.replace(
        flagship.contract, eh="emscripten-legacy", wasm_eh_encoding=None, threads=None,
        features_required=()))
    assert platformtools.abi_flags(legacy) == ()
    linux = dict(platforms)["flagship:linux-x86_64"]
    assert platformtools.abi_flags(linux) == ()


def _mingw(**toolchain: object) -> Platform:
    p = dict(_platforms_cache())["flagship:windows-x86_64"]
    return dataclasses.replace(p, toolchain=dataclasses.replace(p.toolchain, **toolchain))


_CACHE: list[tuple[str, Platform]] = []


def _platforms_cache() -> list[tuple[str, Platform]]:
    if not _CACHE:
        ws = load_workspace(support.ROOT / "examples" / "flagship")
        _CACHE.extend((f"flagship:{n}", p) for n, p in ws.platforms.items())
    return _CACHE


def test_windres_is_the_platforms_own_in_every_rendering() -> None:
    """The twins disagreed: the CMake file took ``<triple>-windres`` from the compiler's name
    whatever the table said; the tools folder took the table's. Now both take the table's."""
    p = _mingw(windres=("llvm-windres-14",))
    pt = platformtools.portable(p)
    assert 'set(CMAKE_RC_COMPILER "llvm-windres-14")' in cmakefile.render(pt).text
    assert "windres = ['llvm-windres-14']" in mesonfile.render(pt).text
    assert _execs(configure.render(pt).scripts["x86_64-w64-mingw32-windres"]) == (
        "llvm-windres-14",)


def test_the_msvc_runtime_of_the_contract_reaches_cmake_and_meson() -> None:
    p = _mingw()
    p = dataclasses.replace(p, contract=dataclasses.replace(p.contract, msvc_runtime="MT"))
    pt = platformtools.portable(p)
    assert 'set(CMAKE_MSVC_RUNTIME_LIBRARY "MultiThreaded" CACHE STRING "")' in \
        cmakefile.render(pt).text
    assert "b_vscrt = 'mt'" in mesonfile.render(pt).text
    plain = platformtools.portable(_mingw())
    assert "MSVC_RUNTIME" not in cmakefile.render(plain).text
    assert "b_vscrt" not in mesonfile.render(plain).text


@pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake")
def test_cmake_reads_back_every_value_exactly(tmp_path: Path) -> None:
    """A folder whose name holds what CMake's quoted arguments must escape (``"``, ``$``,
    ``\\``, ``;``, a tab) reaches CMake as exactly itself: CMake reads the file and prints
    the values back (the file quotes with ``prebake.cmake.quoting``, as every CMake text
    prebake writes does)."""
    odd = tmp_path / 'we"ird $dir\\x;y\tz'
    odd.mkdir()
    gcc = odd / "gcc"
    gcc.write_text("#!/bin/sh\nexit 0\n")
    gcc.chmod(0o755)
    p = _mingw(cc=(str(gcc),), cxx=(str(gcc),), ar=(str(odd / "ar"),),
               ranlib=(str(odd / "ranlib"),), nm=(str(odd / "nm"),), strip=(str(odd / "st"),),
               windres=(str(odd / "rc"),))
    pt = dataclasses.replace(platformtools.portable(p), prefix_map=(),
                             tools={"cc": (str(gcc),), "cxx": (str(gcc),),
                                    "ar": (str(odd / "ar"),), "ranlib": (str(odd / "ranlib"),)},
                             find_roots=(str(odd / "prefix"),), sysroot=None)
    made = cmakefile.render(pt)
    path = made.write(tmp_path / "tc")
    script = tmp_path / "show.cmake"
    script.write_text(f'include("{path}")\n'
                      'message(STATUS "cc=[${CMAKE_C_COMPILER}]")\n'
                      'message(STATUS "ar=[${CMAKE_AR}]")\n'
                      'message(STATUS "root=[${CMAKE_FIND_ROOT_PATH}]")\n')
    out = subprocess.run(["cmake", "-P", str(script)], capture_output=True, text=True,
                         check=True).stdout
    assert f"-- cc=[{gcc}]\n" in out
    # a FILEPATH cache entry is a CMake path: CMake itself turns its backslash into a slash
    assert f"-- ar=[{str(odd / 'ar').replace(chr(92), '/')}]\n" in out
    assert f"-- root=[{odd / 'prefix'}]\n" in out


def test_one_value_per_unit_is_what_the_build_renders(tmp_path: Path) -> None:
    """``for_unit`` resolves each pinned role once on the build's PATH; a role the machine
    lacks is missing (named by the renderer that needs it), not a fallback."""
    p = _mingw(nm=("nowhere-nm",))
    if shutil.which("x86_64-w64-mingw32-gcc") is None:
        pytest.skip("needs mingw-w64")
    import os

    pt = platformtools.for_unit(p, work_root=tmp_path, prefix=tmp_path / "p",
                                deps=tmp_path / "d", env=dict(os.environ), launcher=None)
    assert pt.tools["cc"][0] == shutil.which("x86_64-w64-mingw32-gcc")
    assert pt.missing == {"nm": "nowhere-nm"} and "nm" not in pt.tools
    with pytest.raises(configure.ToolsError, match="nm 'nowhere-nm' is not on the build's"):
        configure.render(pt, named=["nm"])
    assert "nm =" not in mesonfile.render(pt).text
    assert "CMAKE_NM" not in cmakefile.render(pt).text
    assert shellscript.FIXED_MTIME == 315532800
