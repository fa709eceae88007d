"""The CMake toolchain file prebake writes for a platform: what ``{cmake_toolchain}`` names.

A platform's table (os, arch, the pinned compilers with their target flags, ``ar``) is
everything CMake needs to cross-build, but only as a toolchain file: a compiler given through
``CC``/``CXX`` never tells CMake the target system, so it builds "for the host" with a foreign
compiler (x86 kernels picked, target binaries run on the build machine). The file holds:

- ``CMAKE_SYSTEM_NAME``/``CMAKE_SYSTEM_PROCESSOR`` from os/arch when the platform is not the
  build machine (``SYSTEM_NAMES``, ``PROCESSORS``); a native platform stays native;
- ``CMAKE_<LANG>_COMPILER`` as one absolute path: a compiler that is several words
  (``python -m ziglang cc -target aarch64-linux-gnu.2.28``, or any compiler with prebake's
  ``-ffile-prefix-map``) becomes a two-line ``/bin/sh`` wrapper next to the file, since CMake
  takes a compiler path as one word;
- the compiler launcher (ccache) as ``CMAKE_<LANG>_COMPILER_LAUNCHER`` where the family takes
  one in front (``prebake.toolchain.launcher.with_launcher``);
- for a driver that reads ``-march`` as ``-mcpu`` on ARM (zig), a wrapper that rewrites GCC's
  ``-march=armv8.2-a+dotprod`` into zig's ``-mcpu=generic+v8_2a+dotprod`` (``+fp16`` is
  ``fullfp16`` there): build systems set such flags per file for their ARM kernels;
- ``CMAKE_AR``/``CMAKE_RANLIB`` (wrappers too when several words: ``zig ar``),
  ``CMAKE_NM``/``CMAKE_STRIP`` where the platform has them, and for Windows targets the
  platform's ``windres`` (``CMAKE_RC_COMPILER``);
- pkg-config (``PKG_CONFIG_EXECUTABLE``) searching only the unit's prefix and its
  dependencies' (``PKG_CONFIG_LIBDIR``), as the tools folder's and the Meson file's do;
- for a cross build, ``CMAKE_FIND_ROOT_PATH`` = the unit's own prefix and its deps (plus the
  compiler's ``/usr/<triple>`` sysroot where one exists) with programs found on the host and
  libraries, headers and packages only under those roots;
- for Emscripten, Emscripten's own ``Emscripten.cmake`` (next to the resolved ``emcc``), with the
  unit's folders appended to its root path;
- the workspace's own ``cmake_toolchain`` file, if it names one, included last.

The file is rendered from the unit's :class:`~prebake.toolchain.platformtools.PlatformTools`
(the value the configure tools folder and the Meson machine file are rendered from too), with
the platform's ABI flags as ``CMAKE_<LANG>_FLAGS_INIT`` and the linkers' ``…_FLAGS_INIT``, and
``CMAKE_MSVC_RUNTIME_LIBRARY`` from the contract's MSVC runtime on a platform that targets MSVC
(CMake reads it for a project whose policy CMP0091 is new: ``cmake_minimum_required`` 3.15 or
later). Values are quoted by ``prebake.cmake.quoting``.

The same function renders a *portable* form (``{python}``, ``{work}``… instead of this
machine's paths, no launcher): that text is what enters the unit's input hash and what
``prebake toolchain cmake`` shows, so two machines agree and a generator change rebuilds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from prebake.cmake.quoting import cmake_quote
from prebake.errors import PrebakeError
from prebake.toolchain import platformtools, shellscript
from prebake.toolchain.platformtools import PlatformTools
from prebake.workspace.model import Platform

FILE_NAME = "toolchain.cmake"
LANGS = (("C", "cc"), ("CXX", "cxx"))
EMSCRIPTEN_MODULE = "cmake/Modules/Platform/Emscripten.cmake"  # below Emscripten's folder
# CMAKE_MSVC_RUNTIME_LIBRARY's words for the contract's MSVC runtimes
MSVC_RUNTIME_LIBRARY: Mapping[str, str] = {"MD": "MultiThreadedDLL", "MT": "MultiThreaded",
                                           "MDd": "MultiThreadedDebugDLL",
                                           "MTd": "MultiThreadedDebug"}
LINKERS = ("EXE", "SHARED", "MODULE")


class ToolchainFileError(PrebakeError):
    """The platform's table cannot make a CMake toolchain file (one line says why)."""


@dataclass(frozen=True)
class ToolchainFile:
    """The file's text and the wrapper scripts it names (file name -> script)."""

    platform: str
    text: str
    wrappers: Mapping[str, str] = field(default_factory=dict)

    def write(self, folder: Path) -> Path:
        """Write the file and its wrappers into ``folder`` (replacing an earlier copy)."""
        folder.mkdir(parents=True, exist_ok=True)
        for name, script in sorted(self.wrappers.items()):
            shellscript.write_file(folder / "bin" / name, script, 0o755)
        return shellscript.write_file(folder / FILE_NAME, self.text, 0o644)

    def rendered(self) -> str:
        """The file and its wrappers as one text (what ``prebake toolchain cmake`` prints)."""
        parts = [self.text]
        for name, script in sorted(self.wrappers.items()):
            parts.append(f"# ---- bin/{name} ----\n{script}")
        return "\n".join(parts)


def _set(name: str, value: str, cache: str = "") -> str:
    return f"set({name} {cmake_quote(value)}{cache})"


def render(pt: PlatformTools) -> ToolchainFile:
    """The toolchain file of ``pt`` (cross or native as ``pt`` says)."""
    p, m = pt.platform, pt.machine
    if m.cmake_system is None:
        raise ToolchainFileError(
            f"platform {p.name}: os {p.os!r} has no CMake system name, so prebake cannot "
            f"write its CMake toolchain file (known: {', '.join(platformtools.CMAKE_SYSTEMS)})")
    why = "its CMake toolchain file names it"
    lines = [f"# CMake toolchain file for platform {p.name}, written by prebake from",
             "# the platform's table in prebake.toml (do not edit: it is rewritten each build).",
             "include_guard(GLOBAL)"]
    wrappers: dict[str, str] = {}

    def tool(role: str) -> str:
        argv = pt.need(role, why, ToolchainFileError)
        if len(argv) == 1:
            return argv[0]
        name = shellscript.wrapper_name(argv, role)
        if name in wrappers:  # cc and cxx spelled with one command name
            name = f"{role}-{name}"
        wrappers[name] = shellscript.wrapper_script(m.arch, argv, role)
        return f"{pt.folder}/bin/{name}"

    if pt.emscripten is not None:
        module = f"{pt.emscripten}/{EMSCRIPTEN_MODULE}"
        if not pt.portable and not Path(module).is_file():
            raise ToolchainFileError(f"platform {p.name}: {pt.tools['cc'][0]} has no "
                                     f"{Path(module).name} next to it ({module})")
        lines.append(f"include({cmake_quote(module)})")
    else:
        for role in ("cc", "cxx"):  # both named before the wrappers: a missing one is said
            pt.need(role, why, ToolchainFileError)
        if pt.cross:
            lines.append(f"set(CMAKE_SYSTEM_NAME {m.cmake_system})")
            lines.append(f"set(CMAKE_SYSTEM_PROCESSOR {m.cmake_processor})")
        for lang, role in LANGS:
            lines.append(_set(f"CMAKE_{lang}_COMPILER", tool(role)))
        lines.append(_set("CMAKE_AR", tool("ar"), ' CACHE FILEPATH "" FORCE'))
        lines.append(_set("CMAKE_RANLIB", tool("ranlib"), ' CACHE FILEPATH "" FORCE'))
        for role, name in (("nm", "CMAKE_NM"), ("strip", "CMAKE_STRIP")):
            if pt.get(role) is not None:
                lines.append(_set(name, tool(role), ' CACHE FILEPATH "" FORCE'))
        if pt.get("windres") is not None:
            lines.append(_set("CMAKE_RC_COMPILER", tool("windres")))
    if pt.launcher is not None:
        for lang, _role in LANGS:
            lines.append(_set(f"CMAKE_{lang}_COMPILER_LAUNCHER", pt.launcher))
    if pt.abi_flags:  # the platform's ABI, on every compile and link (the project adds its own)
        flags = " ".join(pt.abi_flags)
        lines += [_set(f"CMAKE_{lang}_FLAGS_INIT", flags) for lang, _role in LANGS]
        lines += [_set(f"CMAKE_{kind}_LINKER_FLAGS_INIT", flags) for kind in LINKERS]
    if pt.msvc_runtime is not None:
        lines.append(_set("CMAKE_MSVC_RUNTIME_LIBRARY", MSVC_RUNTIME_LIBRARY[pt.msvc_runtime],
                          ' CACHE STRING ""'))
    if p.os == "macos":
        lines.append(f"set(CMAKE_OSX_ARCHITECTURES {m.cmake_processor} CACHE STRING \"\")")
        if p.contract.macos_min:
            lines.append(f"set(CMAKE_OSX_DEPLOYMENT_TARGET {p.contract.macos_min} "
                         "CACHE STRING \"\")")
    if pt.cross or pt.emscripten is not None:
        roots = [*pt.find_roots, *([pt.sysroot] if pt.sysroot else [])]
        verb = "APPEND" if pt.emscripten is not None else "PREPEND"
        lines.append(f"list({verb} CMAKE_FIND_ROOT_PATH {' '.join(map(cmake_quote, roots))})")
        lines += ["set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)",  # host tools run here
                  "set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)",
                  "set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)",
                  "set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)"]
    pkg_config = pt.get("pkg_config")
    if pkg_config is not None:  # FindPkgConfig: the unit's roots only, as configure's and Meson's
        lines.append(_set("PKG_CONFIG_EXECUTABLE", pkg_config[0], ' CACHE FILEPATH "" FORCE'))
        lines.append(f"set(ENV{{PKG_CONFIG_LIBDIR}} {cmake_quote(':'.join(pt.pkg_config_dirs()))})")
        lines.append('set(ENV{PKG_CONFIG_PATH} "")')
    if pt.cmake_user_file is not None:
        lines.append(f"include({cmake_quote(pt.cmake_user_file)})  # platforms.{p.name}"
                     ".toolchain.cmake_toolchain")
    return ToolchainFile(p.name, "\n".join(lines) + "\n", wrappers)


def portable(platform: Platform, *, shared_prefix: bool, cross: bool | None = None
             ) -> ToolchainFile:
    """The file with ``{python}``, ``{work}``… for this machine's paths and no launcher: the
    text the input hash reads and ``prebake toolchain cmake`` shows."""
    return render(platformtools.portable(platform, shared_prefix=shared_prefix, cross=cross))


def for_unit(platform: Platform, *, work_root: Path, prefix: Path, deps: Path,
             env: Mapping[str, str], launcher: str | None, workspace_root: Path,
             flags: Sequence[str] | None = None, cross: bool | None = None) -> ToolchainFile:
    """The file one unit's commands use, with this machine's paths (``platform`` carries the
    commands the toolchain check resolved; ``platformtools.for_unit`` finds the rest)."""
    return render(platformtools.for_unit(
        platform, work_root=work_root, prefix=prefix, deps=deps, env=env, launcher=launcher,
        flags=flags, workspace_root=workspace_root, cross=cross))


def toolchain_folder(work_root: Path) -> Path:
    return work_root / "toolchain"


def file_path(work_root: Path) -> Path:
    """Where ``{cmake_toolchain}`` points for a unit whose work folder is ``work_root``."""
    return toolchain_folder(work_root) / FILE_NAME
