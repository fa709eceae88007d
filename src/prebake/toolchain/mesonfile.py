"""The Meson machine file prebake writes for a platform: what ``{meson_cross}`` hands to
``meson setup``.

Rendered from the unit's :class:`~prebake.toolchain.platformtools.PlatformTools`, the value the
CMake toolchain file and the configure tools folder are rendered from, by one template
(``templates/meson.ini.j2``) and its context (:func:`context`):

- a *cross file* when the platform is not the build machine (``--cross-file``), a *native file*
  otherwise (``--native-file``): Meson reads ``[host_machine]`` only from a cross file;
- ``[binaries]``: ``c``, ``cpp``, ``ar``, ``ranlib``, ``nm``, ``strip``, ``windres`` (Windows),
  ``pkg-config`` — only the platform's pinned tools (Emscripten's ``emcc``, ``emar``… on wasm),
  each as the array of its words with the prefix map and the launcher (ccache) in front where
  the family takes one; a compiler whose driver reads ``-march`` as ``-mcpu`` on ARM (zig) is
  its wrapper script (``bin/zig-cc``), as in the CMake toolchain file;
- ``[host_machine]``: Meson's system, cpu family, cpu and endianness of the target;
- ``[properties]``: ``pkg_config_libdir``, the unit's prefix and its dependencies' only (never
  the build machine's libraries). ``sys_root`` is not set: Meson passes it to pkg-config as
  ``PKG_CONFIG_SYSROOT_DIR``, which would prefix every path of the unit's own ``.pc`` files;
  the compiler finds its own sysroot (MinGW's ``/usr/<triple>``) without it;
- ``[built-in options]``: ``c_args``/``cpp_args``/``c_link_args``/``cpp_link_args`` with the
  platform's ABI flags (``platformtools.ABI_FLAGS``), ``b_vscrt`` from the contract's MSVC
  runtime where the platform targets MSVC.

Values are quoted by ``prebake.meson.quote``. The portable form is what enters the unit's
input hash and what ``prebake toolchain meson`` prints.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import jinja2

from prebake.errors import PrebakeError
from prebake.meson.quote import meson_array, meson_string
from prebake.toolchain import shellscript
from prebake.toolchain.platformtools import PlatformTools

CROSS_FILE = "meson-cross.ini"
NATIVE_FILE = "meson-native.ini"
WRAP_MODE = "nodownload"  # a build never downloads: a subproject's wrap must be provided
# Meson's [binaries] key for each role
BINARIES: Mapping[str, str] = {"cc": "c", "cxx": "cpp", "ar": "ar", "ranlib": "ranlib",
                               "nm": "nm", "strip": "strip", "windres": "windres",
                               "pkg_config": "pkg-config"}
# b_vscrt's words for the contract's MSVC runtimes
VSCRT: Mapping[str, str] = {"MD": "md", "MT": "mt", "MDd": "mdd", "MTd": "mtd"}


class MesonFileError(PrebakeError):
    """The platform's tools cannot make a Meson machine file (one line says why)."""


@dataclass(frozen=True)
class MesonFile:
    """The machine file's text, its name and the wrapper scripts it names."""

    platform: str
    cross: bool
    text: str
    wrappers: Mapping[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return CROSS_FILE if self.cross else NATIVE_FILE

    def write(self, folder: Path) -> Path:
        for name, script in sorted(self.wrappers.items()):
            shellscript.write_file(folder / "bin" / name, script, 0o755)
        return shellscript.write_file(folder / self.name, self.text, 0o644)

    def rendered(self) -> str:
        """The file and its wrappers as one text (what ``prebake toolchain meson`` prints)."""
        parts = [self.text]
        for name, script in sorted(self.wrappers.items()):
            parts.append(f"# ---- bin/{name} ----\n{script}")
        return "\n".join(parts)


def setup_args(path: Path, cross: bool) -> tuple[str, ...]:
    """What ``{meson_cross}`` expands to: the file and ``--wrap-mode=nodownload``."""
    return (f"--{'cross' if cross else 'native'}-file={path}", f"--wrap-mode={WRAP_MODE}")


def file_path(work_root: Path, cross: bool) -> Path:
    return work_root / "toolchain" / (CROSS_FILE if cross else NATIVE_FILE)


def context(pt: PlatformTools) -> tuple[dict[str, object], dict[str, str]]:
    """The template's context (each section's (key, quoted value) pairs) and the wrapper
    scripts the file names."""
    m = pt.machine
    if pt.cross and (m.meson_system is None or m.cpu_family is None):
        raise MesonFileError(
            f"platform {pt.name}: os {m.os!r} / arch {m.arch!r} have no Meson system or cpu "
            "family, so prebake cannot write its Meson cross file")
    wrappers: dict[str, str] = {}
    binaries = []
    for role, key in BINARIES.items():
        argv = pt.with_launcher(role)
        if argv is None:
            continue
        plain = pt.tools[role]
        if shellscript.rewrites_march(m.arch, plain, role):
            name = shellscript.wrapper_name(plain, role)
            wrappers[name] = shellscript.wrapper_script(m.arch, plain, role)
            argv = (*argv[:len(argv) - len(plain)], f"{pt.folder}/bin/{name}")
        binaries.append((key, meson_array(argv)))
    host_machine = [("system", meson_string(m.meson_system or "")),
                    ("cpu_family", meson_string(m.cpu_family or "")),
                    ("cpu", meson_string(m.cpu)), ("endian", meson_string(m.endian))] \
        if pt.cross else []
    properties = [("pkg_config_libdir", meson_array(pt.pkg_config_dirs()))]
    flags = meson_array(pt.abi_flags)
    options = [(k, flags) for k in ("c_args", "cpp_args", "c_link_args", "cpp_link_args")]
    if pt.msvc_runtime is not None:
        options.append(("b_vscrt", meson_string(VSCRT[pt.msvc_runtime])))
    return {"kind": "cross" if pt.cross else "native", "platform": pt.name,
            "binaries": binaries, "host_machine": host_machine, "properties": properties,
            "options": options}, wrappers


@functools.cache
def _template() -> jinja2.Template:
    env = jinja2.Environment(loader=jinja2.PackageLoader("prebake.toolchain", "templates"),
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                             autoescape=False)  # values are quoted by prebake.meson.quote
    return env.get_template("meson.ini.j2")


def render(pt: PlatformTools) -> MesonFile:
    """The machine file of ``pt`` (cross or native as ``pt`` says)."""
    for role in ("cc", "cxx"):
        pt.need(role, "its Meson machine file names it", MesonFileError)
    ctx, wrappers = context(pt)
    return MesonFile(pt.name, pt.cross, _template().render(ctx), wrappers)


# ---- a Meson setup that stopped where prebake stops it ------------------------------------------

_REFUSED = "Automatic wrap-based subproject downloading is disabled"
# a compiler Meson looked for on PATH: in a cross build only the build machine's can be
_UNKNOWN = re.compile(r"ERROR: Unknown compiler\(s\): (\[\[.*\]\])")
_SUBPROJECT = re.compile(r"(?:Subproject|Executing subproject) (\S+?)(?: is buildable| |$)")
_WRAP_URL = re.compile(r"^\s*(source_url|url)\s*=\s*(\S+)", re.M)
WRAP_READ = 64 << 10  # a wrap file is a few lines


def setup_refused(log_tail: str, src: Path, platform: str) -> str | None:
    """The one line for a ``meson setup`` that stopped where prebake stops it: a wrap that
    would download (``download_refused``), or a probe for a compiler the platform does not
    pin (in a cross build, the build machine's: the tools folder's refusers answer ``cc``,
    ``gcc``…). None: it failed for another reason."""
    refused = download_refused(log_tail, src)
    if refused is not None:
        return refused
    m = next((m for line in reversed(log_tail.splitlines()) if (m := _UNKNOWN.search(line))),
             None)
    if m is None:
        return None
    names = ", ".join(re.findall(r"\['([^']+)'", m[1])[:4])
    return (f"meson looked for a compiler platform {platform} does not pin ({names}…: a "
            "compiler of the build machine, which a cross build has none of); turn off the "
            "project's parts built for the build machine (its native: true targets)")


def download_refused(log_tail: str, src: Path) -> str | None:
    """The one line for a ``meson setup`` that stopped because a subproject's wrap would
    download (``--wrap-mode=nodownload``): the wrap by name and what it would fetch (None:
    the command failed for another reason)."""
    lines = log_tail.splitlines()
    at = next((i for i in range(len(lines) - 1, -1, -1) if _REFUSED in lines[i]), None)
    if at is None:
        return None
    name = next((m[1] for line in reversed(lines[:at]) if (m := _SUBPROJECT.search(line))),
                None)
    if name is None:
        return (f"meson tried to download a subproject ({lines[at].strip()}): a build never "
                "downloads")
    wrap = src / "subprojects" / f"{name}.wrap"
    said = ""
    try:
        with open(wrap, "rb") as fh:
            m = _WRAP_URL.search(fh.read(WRAP_READ).decode("utf-8", "replace"))
        if m:
            said = f": {m[1]} {m[2]}"
    except OSError:
        pass
    return (f"meson tried to download subproject {name} (subprojects/{name}.wrap{said}): a "
            f"build never downloads (--wrap-mode={WRAP_MODE}); give the subproject's source "
            "as one of the recipe's sources, or turn off the option that needs it")
