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
- ``CMAKE_AR``/``CMAKE_RANLIB`` (wrappers too when several words: ``zig ar``), and for
  Windows targets the ``windres`` next to the compiler;
- for a cross build, ``CMAKE_FIND_ROOT_PATH`` = the unit's own prefix and its deps (plus the
  compiler's ``/usr/<triple>`` sysroot where one exists) with programs found on the host and
  libraries, headers and packages only under those roots;
- for Emscripten, Emscripten's own ``Emscripten.cmake`` (next to the resolved ``emcc``), with the
  unit's folders appended to its root path;
- the workspace's own ``cmake_toolchain`` file, if it names one, included last.

The same function renders a *portable* form (``{python}``, ``{work}``… instead of this
machine's paths, no launcher): that text is what enters the unit's input hash and what
``prebake toolchain cmake`` shows, so two machines agree and a generator change rebuilds.
"""

from __future__ import annotations

import os
import platform as host_platform
import re
import shlex
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from prebake.errors import PrebakeError
from prebake.model.families import family_of_argv
from prebake.model.workspace import PYTHON_TOKEN, Platform
from prebake.toolchain.launcher import with_launcher
from prebake.toolchain.prefix_map import compiler_argv, own_folder_mapped, prefix_map_flags

# CMake's names for the os values of prebake.toml (CMAKE_SYSTEM_NAME); "none" has none.
SYSTEM_NAMES: Mapping[str, str] = {"linux": "Linux", "macos": "Darwin", "windows": "Windows",
                                   "wasi": "WASI", "emscripten": "Emscripten"}
# CMAKE_SYSTEM_PROCESSOR where it is not the arch's own name (what each system's uname says).
PROCESSORS: Mapping[tuple[str, str], str] = {("macos", "aarch64"): "arm64"}
# The build machine in prebake's words (platform.system(), platform.machine()).
HOST_OS: Mapping[str, str] = {"Linux": "linux", "Darwin": "macos", "Windows": "windows"}
HOST_ARCH: Mapping[str, str] = {"x86_64": "x86_64", "AMD64": "x86_64", "amd64": "x86_64",
                                "aarch64": "aarch64", "arm64": "aarch64", "i686": "i686"}
FILE_NAME = "toolchain.cmake"
# Wrapper scripts get a fixed mtime: ccache (compiler_check=mtime) then keeps its hits.
FIXED_MTIME = 315532800
PORTABLE_WORK = "{work}"
# the compiler's own folder of headers (zig's lib folder, prefix_map.own_folder_flags)
PORTABLE_OWN = "{toolchain_lib}"
LANGS = (("C", "cc"), ("CXX", "cxx"))
ARM_ARCHES = frozenset({"aarch64", "arm64", "armv7"})
# GCC's -march=armvX.Y-a+feat... as zig's -mcpu=generic+vX_Ya+feat... (+noF: -F; fp16: fullfp16)
MARCH_WRAPPER = r"""#!/bin/sh
# this driver reads -march as -mcpu on ARM: GCC's spelling is rewritten for it
for a do
  shift
  case $a in
    -march=armv*) a=-mcpu=generic+$(printf '%s\n' "${a#-march=arm}" | sed \
      -e 's/^v\([0-9]\)\.\([0-9]\)-a/v\1_\2a/' -e 's/^v\([0-9]\)-a/v\1a/' \
      -e 's/+nofp16\(+\|$\)/-fullfp16\1/g' -e 's/+fp16\(+\|$\)/+fullfp16\1/g' \
      -e 's/+no\([a-z0-9]*\)/-\1/g') ;;
  esac
  set -- "$@" "$a"
done
"""


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
            _write(folder / "bin" / name, script, 0o755)
        return _write(folder / FILE_NAME, self.text, 0o644)

    def rendered(self) -> str:
        """The file and its wrappers as one text (what ``prebake toolchain cmake`` prints)."""
        parts = [self.text]
        for name, script in sorted(self.wrappers.items()):
            parts.append(f"# ---- bin/{name} ----\n{script}")
        return "\n".join(parts)


def _write(path: Path, text: str, mode: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    tmp.write_text(text)
    tmp.chmod(mode)
    os.utime(tmp, (FIXED_MTIME, FIXED_MTIME))
    tmp.replace(path)
    return path


def host() -> tuple[str | None, str | None]:
    """The build machine as (os, arch) in prebake's words (None where it has no name)."""
    return (HOST_OS.get(host_platform.system()), HOST_ARCH.get(host_platform.machine()))


def is_cross(platform: Platform, build_machine: tuple[str | None, str | None] | None = None
             ) -> bool:
    return (platform.os, platform.arch) != (build_machine or host())


# What zig's driver offers beside ``zig ar`` (it has no nm, strip or windres of its own).
ZIG_BESIDE_AR = frozenset({"ranlib"})


def beside_ar(ar: Sequence[str], tool: str) -> tuple[str, ...] | None:
    """The binutils ``tool`` (``ranlib``, ``nm``, ``strip``, ``windres``) of the same
    toolchain as ``ar``: ``x86_64-w64-mingw32-ar`` -> ``…-nm``, ``emar`` -> ``emnm``,
    ``llvm-ar-14`` -> ``llvm-nm-14``, ``xcrun ar`` -> ``xcrun nm``, ``python -m ziglang ar``
    -> ``… ranlib`` (None: no rule knows this ``ar``, or its toolchain has no such tool)."""
    if not ar:
        return None
    fam = family_of_argv(ar)
    if fam is not None and fam.module and fam.module in ar and tool not in ZIG_BESIDE_AR:
        return None
    head, _, base = ar[-1].rpartition("/")
    m = re.fullmatch(r"(|.*-|em)ar((?:-\d+)*)", base)
    if m is None:
        return None
    return (*ar[:-1], f"{head}{'/' if head else ''}{m[1]}{tool}{m[2]}")


def ranlib_for(ar: Sequence[str]) -> tuple[str, ...] | None:
    """``ranlib`` beside ``ar`` (``beside_ar``)."""
    return beside_ar(ar, "ranlib")


def _q(value: str) -> str:
    """A CMake quoted argument."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$") + '"'


def wrapper_script(platform: Platform, argv: Sequence[str], what: str) -> str:
    """A ``/bin/sh`` script that runs ``argv`` with its own arguments after it: how a tool of
    several words (``python -m ziglang cc -target …``, any compiler with prebake's
    ``-ffile-prefix-map``) becomes one path or one word; a compiler whose driver reads
    ``-march`` as ``-mcpu`` on ARM (zig) gets GCC's spelling rewritten first."""
    fam = family_of_argv(argv) if what in ("cc", "cxx") else None
    arm = platform.arch in ARM_ARCHES and fam is not None and fam.march_as_mcpu
    return (MARCH_WRAPPER if arm else "#!/bin/sh\n") + f"exec {shlex.join(argv)} \"$@\"\n"


ZIG_WRAPPERS = {"cc": "zig-cc", "cxx": "zig-c++", "ar": "zig-ar", "ranlib": "zig-ranlib"}


def _wrapper_name(argv: Sequence[str], what: str) -> str:
    """The wrapper's file name: the compiler's own (ccache guesses its type from it)."""
    fam = family_of_argv(argv)
    if fam is not None and fam.module and fam.module in argv:
        return ZIG_WRAPPERS.get(what, f"zig-{what}")
    return Path(argv[0]).name


@dataclass(frozen=True)
class Inputs:
    """What one rendering reads: argv words (resolved or portable), the folders and switches."""

    cc: tuple[str, ...]
    cxx: tuple[str, ...]
    ar: tuple[str, ...]
    ranlib: tuple[str, ...]
    folder: str  # where the file and its bin/ wrappers live
    roots: tuple[str, ...]  # the unit's prefix and deps (searched by a cross build)
    rc: tuple[str, ...] | None = None
    launcher: str | None = None
    sysroot: str | None = None
    emscripten_module: str | None = None
    user_file: str | None = None


def render(platform: Platform, inp: Inputs, *, cross: bool) -> ToolchainFile:
    """The toolchain file for ``platform`` from already resolved (or portable) words."""
    if platform.os not in SYSTEM_NAMES:
        raise ToolchainFileError(
            f"platform {platform.name}: os {platform.os!r} has no CMake system name, so prebake "
            f"cannot write its CMake toolchain file (known: {', '.join(SYSTEM_NAMES)})")
    lines = [f"# CMake toolchain file for platform {platform.name}, written by prebake from",
             "# the platform's table in prebake.toml (do not edit: it is rewritten each build).",
             "include_guard(GLOBAL)"]
    wrappers: dict[str, str] = {}

    def tool(argv: tuple[str, ...], what: str) -> str:
        if len(argv) == 1:
            return argv[0]
        name = _wrapper_name(argv, what)
        if name in wrappers:  # cc and cxx spelled with one command name
            name = f"{what}-{name}"
        wrappers[name] = wrapper_script(platform, argv, what)
        return f"{inp.folder}/bin/{name}"

    if inp.emscripten_module is not None:
        lines.append(f"include({_q(inp.emscripten_module)})")
    else:
        if cross:
            lines.append(f"set(CMAKE_SYSTEM_NAME {SYSTEM_NAMES[platform.os]})")
            proc = PROCESSORS.get((platform.os, platform.arch), platform.arch)
            lines.append(f"set(CMAKE_SYSTEM_PROCESSOR {proc})")
        for lang, what in LANGS:
            argv = inp.cc if what == "cc" else inp.cxx
            lines.append(f"set(CMAKE_{lang}_COMPILER {_q(tool(argv, what))})")
        lines.append(f"set(CMAKE_AR {_q(tool(inp.ar, 'ar'))} CACHE FILEPATH \"\" FORCE)")
        lines.append(f"set(CMAKE_RANLIB {_q(tool(inp.ranlib, 'ranlib'))} CACHE FILEPATH \"\" "
                     "FORCE)")
        if inp.rc is not None:
            lines.append(f"set(CMAKE_RC_COMPILER {_q(tool(inp.rc, 'rc'))})")
    if inp.launcher is not None:
        for lang, _what in LANGS:
            lines.append(f"set(CMAKE_{lang}_COMPILER_LAUNCHER {_q(inp.launcher)})")
    if platform.os == "macos":
        arch = PROCESSORS.get(("macos", platform.arch), platform.arch)
        lines.append(f"set(CMAKE_OSX_ARCHITECTURES {arch} CACHE STRING \"\")")
        if platform.contract.macos_min:
            lines.append(f"set(CMAKE_OSX_DEPLOYMENT_TARGET {platform.contract.macos_min} "
                         "CACHE STRING \"\")")
    if cross or inp.emscripten_module is not None:
        roots = [*dict.fromkeys(inp.roots)]
        if inp.sysroot is not None:
            roots.append(inp.sysroot)
        verb = "APPEND" if inp.emscripten_module is not None else "PREPEND"
        lines.append(f"list({verb} CMAKE_FIND_ROOT_PATH {' '.join(_q(r) for r in roots)})")
        lines += ["set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)",  # host tools run here
                  "set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)",
                  "set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)",
                  "set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)"]
    if inp.user_file is not None:
        lines.append(f"include({_q(inp.user_file)})  # platforms.{platform.name}"
                     ".toolchain.cmake_toolchain")
    return ToolchainFile(platform.name, "\n".join(lines) + "\n", wrappers)


# ---- the words, for this machine or portable ---------------------------------------------------

def _ranlib(platform: Platform) -> tuple[str, ...]:
    tc = platform.toolchain
    if tc.ranlib:
        return tc.ranlib
    got = ranlib_for(tc.ar)
    if got is None:
        raise ToolchainFileError(
            f"platform {platform.name}: no ranlib known for ar {shlex.join(tc.ar)!r}; set "
            f"ranlib in [platforms.{platform.name}.toolchain]")
    return got


def _triple_prefix(cc: Sequence[str]) -> str | None:
    """``x86_64-w64-mingw32`` of ``x86_64-w64-mingw32-gcc`` (a GNU cross compiler's name)."""
    m = re.fullmatch(r"(\w+-\w+-[\w-]+?)-(?:gcc|g\+\+|c\+\+|cc)(?:-[\d.]+)?", Path(cc[0]).name)
    return m[1] if m and cc else None


def _unexpand(argv: Sequence[str]) -> tuple[str, ...]:
    return tuple(PYTHON_TOKEN if a == sys.executable else a for a in argv)


def _spec(platform: Platform, key: str, argv: tuple[str, ...]) -> tuple[str, ...]:
    text = platform.toolchain.spec.get(key)
    return tuple(shlex.split(text)) if text else _unexpand(argv)


def portable(platform: Platform, *, shared_prefix: bool, cross: bool | None = None
             ) -> ToolchainFile:
    """The file with ``{python}``, ``{work}``… for this machine's paths and no launcher: the
    text the input hash reads and ``prebake toolchain cmake`` shows."""
    tc = platform.toolchain
    own = own_folder_mapped(tc.cc)
    flags = (f"-ffile-prefix-map={PORTABLE_WORK}=.",
             *((f"-ffile-prefix-map={PORTABLE_OWN}={own}",) if own else ()))
    cc = compiler_argv(_spec(platform, "cc", tc.cc), flags)
    cxx = compiler_argv(_spec(platform, "cxx", tc.cxx), flags)
    ar = _spec(platform, "ar", tc.ar)
    ranlib = _spec(platform, "ranlib", _ranlib(platform))
    roots = ("{prefix}",) if shared_prefix else ("{prefix}", "{deps_prefix}")
    triple = _triple_prefix(cc)
    rc = (f"{triple}-windres",) if platform.os == "windows" and triple else None
    emscripten = "{emscripten}/cmake/Modules/Platform/Emscripten.cmake" \
        if platform.os == "emscripten" else None
    inp = Inputs(cc, cxx, ar, ranlib, folder=f"{PORTABLE_WORK}/toolchain", roots=roots, rc=rc,
                 sysroot=f"/usr/{triple}" if triple else None, emscripten_module=emscripten,
                 user_file=("{workspace}/" + tc.cmake_toolchain) if tc.cmake_toolchain
                 else None)
    return render(platform, inp, cross=is_cross(platform) if cross is None else cross)


def _resolve(argv: tuple[str, ...], what: str, platform: Platform, path: str | None
             ) -> tuple[str, ...]:
    if not argv:
        raise ToolchainFileError(f"platform {platform.name}: its toolchain has no {what}")
    if argv[0] == sys.executable or "/" in argv[0]:
        found = argv[0] if Path(argv[0]).is_file() else None
    else:
        found = shutil.which(argv[0], path=path)
    if found is None:
        raise ToolchainFileError(
            f"platform {platform.name}: cannot write its CMake toolchain file: {what} "
            f"{argv[0]!r} is not on the build's PATH")
    return (found, *argv[1:])


def for_unit(platform: Platform, *, work_root: Path, prefix: Path, deps: Path,
             env: Mapping[str, str], launcher: str | None, workspace_root: Path,
             flags: Sequence[str] | None = None, cross: bool | None = None) -> ToolchainFile:
    """The file one unit's commands use, with this machine's paths (``platform`` carries the
    commands the toolchain check resolved). Its inputs are the unit's build environment's
    (``prebake.bake.buildenv``): the compilers are found on ``env``'s ``PATH``, ``launcher``
    goes in front where the family takes it, ``flags`` are the prefix map (the work
    folder's, ``prefix_map_flags(work_root)``, when not given)."""

    tc = platform.toolchain
    path = env.get("PATH")
    flags = prefix_map_flags(work_root, tc.cc) if flags is None else tuple(flags)
    cc = _resolve(compiler_argv(tc.cc, flags), "cc", platform, path)
    cxx = _resolve(compiler_argv(tc.cxx, flags), "cxx", platform, path)
    triple = _triple_prefix(tc.cc)
    emscripten = None
    ar: tuple[str, ...]
    ranlib: tuple[str, ...]
    if platform.os == "emscripten":
        module = Path(os.path.realpath(cc[0])).parent / "cmake/Modules/Platform/Emscripten.cmake"
        if not module.is_file():
            raise ToolchainFileError(f"platform {platform.name}: {cc[0]} has no {module.name} "
                                     f"next to it ({module})")
        emscripten = str(module)
        ar = ranlib = ("",)
    else:
        ar = _resolve(tc.ar, "ar", platform, path)
        ranlib = _resolve(_ranlib(platform), "ranlib", platform, path)
    rc = None
    if platform.os == "windows" and triple:
        windres = shutil.which(f"{triple}-windres", path=path)
        rc = (windres,) if windres else None
    sysroot = f"/usr/{triple}" if triple and Path(f"/usr/{triple}").is_dir() else None
    # a launcher only where the family takes one in front (not Emscripten's, not zig)
    use_launcher = launcher if launcher and with_launcher(tc.cc, launcher) != tc.cc else None
    user = tc.cmake_toolchain
    inp = Inputs(cc, cxx, ar, ranlib, folder=str(work_root / "toolchain"),
                 roots=(str(prefix), str(deps)), rc=rc, launcher=use_launcher, sysroot=sysroot,
                 emscripten_module=emscripten,
                 user_file=str((workspace_root / user).resolve()) if user else None)
    return render(platform, inp, cross=is_cross(platform) if cross is None else cross)


def toolchain_folder(work_root: Path) -> Path:
    return work_root / "toolchain"


def file_path(work_root: Path) -> Path:
    """Where ``{cmake_toolchain}`` points for a unit whose work folder is ``work_root``."""
    return toolchain_folder(work_root) / FILE_NAME
