"""One platform's tools for one unit, stated once: what every build system's file is rendered
from.

A platform's table says its compilers (with their target flags), ``ar``, and optionally
``ranlib``/``nm``/``strip``/``windres``; its contract says its ABI. A build system needs the
same facts in its own words: CMake a toolchain file (``prebake.toolchain.cmakefile``), a
``configure`` script a folder of one-word tools (``prebake.toolchain.configure``), Meson a
cross or native file (``prebake.toolchain.mesonfile``). Each of those is a small renderer of
this one value (:class:`PlatformTools`), so they cannot disagree on a tool or a flag:

- ``tools``: each role's command (``cc``, ``cxx`` with the prefix map; ``ar``, ``ranlib``,
  ``nm``, ``strip``, ``windres`` as the table names them or as they lie beside ``ar``;
  ``pkg_config``: the build machine's, held to the unit's roots), resolved on the build's
  ``PATH`` (``for_unit``) or as written with tokens (``portable``);
- ``missing``: the roles the platform pins whose program is not installed (a renderer that
  needs one fails naming it; one that does not need it goes on);
- ``launcher`` (ccache) only where the compiler's family takes one in front;
- ``abi_flags``: the compile and link flags the platform's contract implies
  (``ABI_FLAGS``: native wasm exceptions, their exnref encoding, threads, SIMD128);
- ``msvc_runtime``: the contract's MSVC C runtime, for a platform that targets MSVC;
- ``find_roots`` (the unit's prefix and its dependencies'), ``sysroot`` (a GNU cross
  compiler's ``/usr/<triple>``), ``emscripten`` (the folder of Emscripten's own CMake files);
- the machine in each system's words (``machine``: CMake's system name and processor,
  Meson's system, cpu family, cpu and endianness), and whether the build is cross.

The portable form (``{python}``, ``{work}``, ``{prefix}``… for this machine's paths, no
launcher) is what each rendering's input hash reads and what ``prebake toolchain`` prints.
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
from prebake.recipes.api import TOOL_ROLES
from prebake.toolchain.environment import resolve as environment_tool
from prebake.toolchain.families import family_of_argv
from prebake.toolchain.launcher import with_launcher
from prebake.toolchain.prefix_map import compiler_argv, own_folder_mapped, prefix_map_flags
from prebake.workspace.model import PYTHON_TOKEN, Platform

# The build machine in prebake's words (platform.system(), platform.machine()).
HOST_OS: Mapping[str, str] = {"Linux": "linux", "Darwin": "macos", "Windows": "windows"}
HOST_ARCH: Mapping[str, str] = {"x86_64": "x86_64", "AMD64": "x86_64", "amd64": "x86_64",
                                "aarch64": "aarch64", "arm64": "aarch64", "i686": "i686"}
# CMake's names for the os values of prebake.toml (CMAKE_SYSTEM_NAME); "none" has none.
CMAKE_SYSTEMS: Mapping[str, str] = {"linux": "Linux", "macos": "Darwin", "windows": "Windows",
                                    "wasi": "WASI", "emscripten": "Emscripten"}
# CMAKE_SYSTEM_PROCESSOR where it is not the arch's own name (what each system's uname says).
CMAKE_PROCESSORS: Mapping[tuple[str, str], str] = {("macos", "aarch64"): "arm64"}
# Meson's [host_machine] words (its reference tables "CPU families" and "Operating systems").
MESON_SYSTEMS: Mapping[str, str] = {"linux": "linux", "macos": "darwin", "windows": "windows",
                                    "emscripten": "emscripten", "wasi": "wasi"}
MESON_CPU_FAMILIES: Mapping[str, str] = {"x86_64": "x86_64", "aarch64": "aarch64",
                                         "i686": "x86", "arm": "arm", "armv7": "arm",
                                         "wasm32": "wasm32"}
BIG_ENDIAN_ARCHES: frozenset[str] = frozenset()  # every arch prebake knows is little-endian
# The GNU triple of each (os, arch) prebake knows: what autotools' --host/--build take and
# what the tools' names start with.
TRIPLES: Mapping[tuple[str, str], str] = {
    ("linux", "x86_64"): "x86_64-linux-gnu",
    ("linux", "aarch64"): "aarch64-linux-gnu",
    ("linux", "i686"): "i686-linux-gnu",
    ("linux", "arm"): "arm-linux-gnueabihf",
    ("windows", "x86_64"): "x86_64-w64-mingw32",
    ("windows", "i686"): "i686-w64-mingw32",
    ("windows", "aarch64"): "aarch64-w64-mingw32",
    ("macos", "x86_64"): "x86_64-apple-darwin",
    ("macos", "aarch64"): "aarch64-apple-darwin",
    ("emscripten", "wasm32"): "wasm32-unknown-emscripten",
    ("wasi", "wasm32"): "wasm32-wasi",
}
ROLES = tuple(TOOL_ROLES)  # cc, cxx, ar, ranlib, nm, strip, windres, pkg_config
# What zig's driver offers beside ``zig ar`` (it has no nm, strip or windres of its own).
ZIG_BESIDE_AR = frozenset({"ranlib"})
PKG_CONFIG_DIRS = ("lib/pkgconfig", "share/pkgconfig")
# The compile and link flags a contract's terms imply, stated here once (policy is data):
# (term, value it must have, flags). Only terms whose flag a compiler must be given to make
# such objects: a contract that asks for native wasm exceptions in the exnref encoding with
# threads and SIMD128 is built with exactly the flags its host links with.
ABI_FLAGS: tuple[tuple[str, object, tuple[str, ...]], ...] = (
    ("eh", "wasm", ("-fwasm-exceptions",)),
    ("wasm_eh_encoding", "exnref", ("-sWASM_LEGACY_EXCEPTIONS=0",)),
    ("threads", True, ("-pthread",)),
    ("features_required", "simd128", ("-msimd128",)),
)
ABI_FLAG_OSES = frozenset({"emscripten", "wasi"})  # where those terms are compile flags
# The portable form's tokens for this machine's paths.
PORTABLE_WORK = "{work}"
PORTABLE_OWN = "{toolchain_lib}"  # the compiler's own folder of headers (zig's lib folder)


class PlatformToolsError(PrebakeError):
    """The platform cannot give a build the tool it needs (one line says which and why)."""


def host() -> tuple[str | None, str | None]:
    """The build machine as (os, arch) in prebake's words (None where it has no name)."""
    return (HOST_OS.get(host_platform.system()), HOST_ARCH.get(host_platform.machine()))


def is_cross(platform: Platform, build_machine: tuple[str | None, str | None] | None = None
             ) -> bool:
    return (platform.os, platform.arch) != (build_machine or host())


def gnu_triple(os_name: str, arch: str) -> str | None:
    return TRIPLES.get((os_name, arch))


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


def pinned_argv(platform: Platform, role: str) -> tuple[str, ...] | None:
    """The platform's own command for ``role`` as written (``{python}`` expanded): cc/cxx/ar
    from its table, a binutils tool as the table names it or as it lies beside ``ar``
    (None: the platform pins none; ``windres`` only for Windows; ``pkg_config`` is the build
    machine's, never the platform's)."""
    tc = platform.toolchain
    if role in ("cc", "cxx", "ar"):
        return tuple(getattr(tc, role)) or None
    if role == "pkg_config" or (role == "windres" and platform.os != "windows"):
        return None
    named: tuple[str, ...] = getattr(tc, role)
    return named or beside_ar(tc.ar, role)


def _triple_prefix(cc: Sequence[str]) -> str | None:
    """``x86_64-w64-mingw32`` of ``x86_64-w64-mingw32-gcc`` (a GNU cross compiler's name)."""
    if not cc:
        return None
    m = re.fullmatch(r"(\w+-\w+-[\w-]+?)-(?:gcc|g\+\+|c\+\+|cc)(?:-[\d.]+)?", Path(cc[0]).name)
    return m[1] if m else None


def abi_flags(platform: Platform) -> tuple[str, ...]:
    """The flags the platform's contract implies (``ABI_FLAGS``), in the table's order."""
    if platform.os not in ABI_FLAG_OSES:
        return ()
    c = platform.contract
    out: list[str] = []
    for term, want, flags in ABI_FLAGS:
        got = getattr(c, term)
        if (want in got) if isinstance(got, tuple) else (got == want):
            out.extend(flags)
    return tuple(out)


@dataclass(frozen=True)
class Machine:
    """The target in each build system's words."""

    os: str
    arch: str
    cmake_system: str | None
    cmake_processor: str
    meson_system: str | None
    cpu_family: str | None
    cpu: str
    endian: str
    triple: str | None  # GNU triple (None: prebake knows none)


def machine_of(platform: Platform) -> Machine:
    os_name, arch = platform.os, platform.arch
    return Machine(os_name, arch, CMAKE_SYSTEMS.get(os_name),
                   CMAKE_PROCESSORS.get((os_name, arch), arch), MESON_SYSTEMS.get(os_name),
                   MESON_CPU_FAMILIES.get(arch), arch,
                   "big" if arch in BIG_ENDIAN_ARCHES else "little", gnu_triple(os_name, arch))


@dataclass(frozen=True)
class PlatformTools:
    """One unit's platform tools (see the module's docstring)."""

    platform: Platform
    machine: Machine
    cross: bool
    tools: Mapping[str, tuple[str, ...]]  # role -> command (compilers with the prefix map)
    missing: Mapping[str, str] = field(default_factory=dict)  # role -> program not found
    launcher: str | None = None  # only where the compiler's family takes one in front
    prefix_map: tuple[str, ...] = ()
    abi_flags: tuple[str, ...] = ()
    msvc_runtime: str | None = None
    find_roots: tuple[str, ...] = ()
    sysroot: str | None = None
    emscripten: str | None = None  # Emscripten's folder (cmake/Modules/Platform/…)
    folder: str = ""  # the unit's toolchain folder (where wrapper scripts go)
    cmake_user_file: str | None = None  # the workspace's own cmake_toolchain, included last
    pinned_names: frozenset[str] = frozenset()  # generic names the platform's commands are
    portable: bool = False

    @property
    def name(self) -> str:
        return self.platform.name

    def get(self, role: str) -> tuple[str, ...] | None:
        return self.tools.get(role)

    def need(self, role: str, why: str,
             error: type[PrebakeError] = PlatformToolsError) -> tuple[str, ...]:
        """The role's command, or ``error`` naming what is missing (``why``: who needs it)."""
        got = self.tools.get(role)
        if got is not None:
            return got
        if role in self.missing:
            raise error(f"platform {self.name}: {why}: {role} {self.missing[role]!r} is not "
                        "on the build's PATH")
        if role == "windres":
            raise error(f"platform {self.name} is not a Windows platform: it has no windres "
                        f"({why})")
        if role == "pkg_config":
            raise error(f"platform {self.name}: pkg-config is not on the build's PATH ({why}; "
                        "Debian's pkg-config)")
        ar = self.platform.toolchain.ar
        raise error(f"platform {self.name} pins no {role}: none is known beside its ar "
                    f"{shlex.join(ar)!r}; set {role} in [platforms.{self.name}.toolchain] "
                    f"({why})")

    def with_launcher(self, role: str) -> tuple[str, ...] | None:
        """A compiler's command with the launcher in front (other roles as they are)."""
        argv = self.tools.get(role)
        if argv is None or role not in ("cc", "cxx") or self.launcher is None:
            return argv
        return (self.launcher, *argv)

    def pkg_config_dirs(self) -> tuple[str, ...]:
        """The only folders pkg-config may search: the unit's roots' (never the machine's)."""
        return tuple(f"{root}/{d}" for root in self.find_roots for d in PKG_CONFIG_DIRS)


# ---- built for this machine, or portable ---------------------------------------------------

def _unexpand(argv: Sequence[str]) -> tuple[str, ...]:
    return tuple(PYTHON_TOKEN if a == sys.executable else a for a in argv)


def _spelled(platform: Platform, role: str, argv: tuple[str, ...]) -> tuple[str, ...]:
    """A role's command as the table spells it (``{python}`` kept), for the portable form."""
    text = platform.toolchain.spec.get(role)
    return tuple(shlex.split(text)) if text else _unexpand(argv)


def _pinned_names(platform: Platform) -> frozenset[str]:
    """The generic names the platform's own commands start with (``gcc`` where it pins gcc):
    a fallback to them is a fallback to the pinned tool."""
    return frozenset(Path(a[0]).name for role in ROLES if (a := pinned_argv(platform, role)))


def _msvc_runtime(platform: Platform) -> str | None:
    """The contract's MSVC C runtime where the platform targets Windows (MinGW's objects
    carry none, so a contract naming one is an MSVC platform's)."""
    return platform.contract.msvc_runtime if platform.os == "windows" else None


def portable(platform: Platform, *, shared_prefix: bool = False, cross: bool | None = None
             ) -> PlatformTools:
    """The platform's tools with tokens for this machine's paths and no launcher: the
    value every rendering's input hash reads and ``prebake toolchain`` prints."""
    tc = platform.toolchain
    own = own_folder_mapped(tc.cc)
    flags = (f"-ffile-prefix-map={PORTABLE_WORK}=.",
             *((f"-ffile-prefix-map={PORTABLE_OWN}={own}",) if own else ()))
    tools: dict[str, tuple[str, ...]] = {}
    for role in ROLES:
        argv = pinned_argv(platform, role)
        if argv is None:
            continue
        argv = _spelled(platform, role, argv)
        tools[role] = compiler_argv(argv, flags) if role in ("cc", "cxx") else argv
    tools["pkg_config"] = ("pkg-config",)
    triple = _triple_prefix(tools.get("cc", ()))
    return PlatformTools(
        platform=platform, cross=is_cross(platform) if cross is None else cross, tools=tools,
        prefix_map=flags,
        find_roots=("{prefix}",) if shared_prefix else ("{prefix}", "{deps_prefix}"),
        sysroot=f"/usr/{triple}" if triple else None,
        emscripten="{emscripten}" if platform.os == "emscripten" else None,
        folder=f"{PORTABLE_WORK}/toolchain",
        cmake_user_file=("{workspace}/" + tc.cmake_toolchain) if tc.cmake_toolchain else None,
        portable=True, machine=machine_of(platform), abi_flags=abi_flags(platform),
        msvc_runtime=_msvc_runtime(platform), pinned_names=_pinned_names(platform))


def _resolve(argv: tuple[str, ...], platform: Platform, path: str | None
             ) -> tuple[str, ...] | None:
    argv = environment_tool(argv, platform.toolchain.environment)
    if argv[0] == sys.executable or "/" in argv[0]:
        found = argv[0] if Path(argv[0]).is_file() else None
    else:
        found = shutil.which(argv[0], path=path)
    return None if found is None else (found, *argv[1:])


def for_unit(platform: Platform, *, work_root: Path, prefix: Path, deps: Path,
             env: Mapping[str, str], launcher: str | None,
             flags: Sequence[str] | None = None, workspace_root: Path | None = None,
             cross: bool | None = None) -> PlatformTools:
    """The tools one unit's commands use, with this machine's paths (``platform`` carries the
    commands the toolchain check resolved): each pinned role found on ``env``'s ``PATH``
    (through the toolchain environment's wrappers), ``flags`` (the prefix map; the work
    folder's when not given) on the compilers, ``launcher`` kept where the family takes it
    in front. A pinned role that is not installed is in ``missing``, not an error yet."""
    tc = platform.toolchain
    path = env.get("PATH")
    flags = prefix_map_flags(work_root, tc.cc) if flags is None else tuple(flags)
    tools: dict[str, tuple[str, ...]] = {}
    missing: dict[str, str] = {}
    for role in ROLES:
        argv = pinned_argv(platform, role) if role != "pkg_config" else ("pkg-config",)
        if argv is None:
            continue
        found = _resolve(argv, platform, path)
        if found is None:
            missing[role] = argv[0]
            continue
        tools[role] = compiler_argv(found, flags) if role in ("cc", "cxx") else found
    emscripten = None
    if platform.os == "emscripten" and "cc" in tools:
        emscripten = str(Path(os.path.realpath(tools["cc"][0])).parent)
    triple = _triple_prefix(tc.cc)
    sysroot = f"/usr/{triple}" if triple and Path(f"/usr/{triple}").is_dir() else None
    use_launcher = launcher if launcher and with_launcher(tc.cc, launcher) != tc.cc else None
    user = tc.cmake_toolchain
    return PlatformTools(
        platform=platform, cross=is_cross(platform) if cross is None else cross, tools=tools,
        missing=missing, launcher=use_launcher, prefix_map=tuple(flags),
        find_roots=tuple(dict.fromkeys((str(prefix), str(deps)))), sysroot=sysroot,
        emscripten=emscripten, folder=str(work_root / "toolchain"),
        cmake_user_file=str((workspace_root / user).resolve()) if user and workspace_root
        else None, machine=machine_of(platform), abi_flags=abi_flags(platform),
        msvc_runtime=_msvc_runtime(platform), pinned_names=_pinned_names(platform))
