"""Upstream CMake packages are kept: ``<name>::<name>`` is added beside them, never over them.

zstd's own CMake install writes ``lib/cmake/zstd/zstdConfig.cmake`` with the imported target
``zstd::libzstd_static``; abseil writes ``lib/cmake/absl/`` with ``absl::strings`` and 180 more,
each with its usage requirements (``cxx_std_17``, definitions, include folders). Those files
are what the project's own consumers expect, and they know more than prebake could generate.
So when a recipe's install holds a CMake package:

* a package named like the asset keeps its config file; prebake appends one ``include()`` of
  ``<name>-prebake-targets.cmake``, which defines ``<name>::<name>`` as an ``INTERFACE
  IMPORTED`` target linking the upstream target(s) the recipe names
  (``Outputs(cmake_target=…)``). Linking it carries their usage requirements, because CMake
  propagates them through ``INTERFACE_LINK_LIBRARIES``. (An ``ALIAS`` of a non-global imported
  target needs CMake 3.18 and one target; the interface target does both jobs from 3.16.) A
  ``<name>ConfigVersion.cmake`` is written only if upstream has none, so
  ``find_package(<name> <version>)`` works; an upstream one was compared with the pin by the
  version proof.
* a package under another name (abseil's ``absl``) is kept as it is, and prebake writes
  ``lib/cmake/<name>/`` whose config finds that package in the same asset and defines
  ``<name>::<name>`` the same way.

A recipe whose install has a CMake package but names no target fails (unless upstream already
defines ``<name>::<name>``): prebake cannot know which of upstream's targets the asset's name
stands for, and guessing would hand a consumer the wrong one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from prebake.package.cmake import version_file

_CONFIG = re.compile(r"^(?P<name>.+?)(?:Config|-config)\.cmake$")
_IMPORTED = re.compile(
    r"add_library\s*\(\s*([A-Za-z0-9_.+:-]+)\s+(?:STATIC|SHARED|MODULE|UNKNOWN|INTERFACE|OBJECT)"
    r"\s+IMPORTED", re.I)
MAX_CMAKE_TEXT = 4 << 20


class UpstreamCMakeError(Exception):
    """The recipe and the install's CMake packages do not fit together; the message says how."""


@dataclass(frozen=True)
class Package:
    """One CMake package an install holds: ``lib/cmake/zstd/zstdConfig.cmake``."""

    name: str
    config: str  # path of the config file, relative to the prefix
    version_file: str | None
    targets: tuple[str, ...]  # imported targets its folder's files define

    @property
    def folder(self) -> str:
        return self.config.rsplit("/", 1)[0] if "/" in self.config else ""


def _text(path: Path) -> str:
    try:
        if path.is_symlink() or path.stat().st_size > MAX_CMAKE_TEXT:
            return ""
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def find_packages(prefix: Path, files: Iterable[str]) -> list[Package]:
    """The CMake packages among ``files`` (relative to ``prefix``), with their targets."""
    files = sorted(files)
    out = []
    for rel in files:
        fname = rel.rsplit("/", 1)[-1]
        m = _CONFIG.match(fname)
        if not m or fname.endswith(("ConfigVersion.cmake", "-config-version.cmake")):
            continue
        name = m.group("name")
        folder = rel.rsplit("/", 1)[0] if "/" in rel else ""
        in_folder = [f for f in files if f.endswith(".cmake")
                     and (f.rsplit("/", 1)[0] if "/" in f else "") == folder]
        targets = sorted({t for f in in_folder for t in _IMPORTED.findall(_text(prefix / f))})
        version = next((f for f in in_folder if f.rsplit("/", 1)[-1] in
                        (f"{name}ConfigVersion.cmake", f"{name}-config-version.cmake",
                         f"{name.lower()}-config-version.cmake")), None)
        out.append(Package(name, rel, version, tuple(targets)))
    return out


def wrapper_block(name: str, targets: Sequence[str]) -> str:
    umbrella = f"{name}::{name}"
    return "\n".join([
        f"# {umbrella}: added by prebake for the asset's name. It links the upstream target(s)",
        "# below, so a consumer gets their usage requirements (include folders, definitions,",
        "# compile features such as cxx_std_17) exactly as upstream declared them.",
        f"if(NOT TARGET {umbrella})",
        *[f'  if(NOT TARGET {t})\n    message(FATAL_ERROR "{umbrella}: the upstream target {t} '
          f'is not defined")\n  endif()' for t in targets],
        f"  add_library({umbrella} INTERFACE IMPORTED)",
        f'  set_target_properties({umbrella} PROPERTIES INTERFACE_LINK_LIBRARIES "'
        + ";".join(targets) + '")',
        "endif()",
        "",
    ])


def include_line(name: str) -> str:
    return f'include("${{CMAKE_CURRENT_LIST_DIR}}/{name}-prebake-targets.cmake")'


@dataclass
class Plan:
    """What to write for one recipe: files (path -> bytes, written only where none exists),
    a line to append to an upstream config, and whether prebake's own CMake files are needed."""

    files: dict[str, bytes]
    append: tuple[str, str] | None  # (config path, line)
    generate_own: bool


def plan(name: str, version: str, arch: str | None, packages: Sequence[Package],
         cmake_targets: Sequence[str]) -> Plan:
    """How ``<name>::<name>`` reaches the consumer given the install's CMake packages."""
    umbrella = f"{name}::{name}"
    defined = {t: p for p in packages for t in p.targets}
    same = next((p for p in packages if p.name == name), None)
    if not packages:
        if cmake_targets:
            raise UpstreamCMakeError(
                f"{name}: Outputs(cmake_target={list(cmake_targets)}) names upstream targets, "
                "but the install holds no CMake package (no lib/cmake/<pkg>/<pkg>Config.cmake)")
        return Plan({}, None, generate_own=True)
    missing = [t for t in cmake_targets if t not in defined]
    if missing:
        have = ", ".join(sorted(defined)[:20]) or "none"
        raise UpstreamCMakeError(
            f"{name}: Outputs(cmake_target=…) names {', '.join(missing)}, which no CMake "
            f"package of the install defines (it defines: {have})")
    if not cmake_targets:
        if umbrella in defined:
            return Plan({}, None, generate_own=False)
        if same is None:
            return Plan({}, None, generate_own=True)  # e.g. a helper package; ours is separate
        raise UpstreamCMakeError(
            f"{name}: the install has its own CMake package {same.config} (targets: "
            f"{', '.join(same.targets) or 'none'}) but no {umbrella}; name the upstream target "
            f"{umbrella} stands for with Outputs(cmake_target=\"…\")")
    if umbrella in defined and same is not None:
        return Plan({}, None, generate_own=False)
    if same is not None:
        files = {f"{same.folder}/{name}-prebake-targets.cmake":
                 wrapper_block(name, cmake_targets).encode()}
        if same.version_file is None:
            files[f"{same.folder}/{name}ConfigVersion.cmake"] = version_file(
                version, arch).encode()
        return Plan(files, (same.config, include_line(name)), generate_own=False)
    # another package name: a config of ours that finds the upstream package(s) in this asset
    deps = sorted({defined[t].name: defined[t] for t in cmake_targets}.items())
    lines = [
        f"# {name} {version}: CMake package configuration generated by prebake. It finds the",
        "# upstream package(s) installed in the same asset and adds the asset's own target.",
        "cmake_minimum_required(VERSION 3.16)",
        "include(CMakeFindDependencyMacro)",
    ]
    for dep, pkg in deps:
        rel = _relative(f"lib/cmake/{name}", pkg.folder)
        lines.append(f'find_dependency({dep} CONFIG PATHS "${{CMAKE_CURRENT_LIST_DIR}}/{rel}" '
                     "NO_DEFAULT_PATH NO_CMAKE_FIND_ROOT_PATH)")
    lines += [f"set({name}_VERSION {version})", wrapper_block(name, cmake_targets),
              f'set({name}_LIBRARIES "{umbrella}")', f"set({name}_FOUND TRUE)", ""]
    base = f"lib/cmake/{name}"
    return Plan({f"{base}/{name}Config.cmake": "\n".join(lines).encode(),
                 f"{base}/{name}ConfigVersion.cmake": version_file(version, arch).encode()},
                None, generate_own=False)


def _relative(src: str, dest: str) -> str:
    """``lib/cmake/abseil`` -> ``lib/cmake/absl``: ``../absl``."""
    a, b = src.split("/"), dest.split("/")
    common = 0
    while common < min(len(a), len(b)) and a[common] == b[common]:
        common += 1
    return "/".join([".."] * (len(a) - common) + b[common:]) or "."


def apply(prefix: Path, p: Plan) -> list[str]:
    """Write the plan's files into ``prefix`` (never over an existing file) and append the
    include line to the upstream config once; returns what changed."""
    changed = []
    for rel, data in p.files.items():
        dest = prefix / rel
        if not dest.exists():
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
            changed.append(rel)
    if p.append is not None:
        rel, line = p.append
        config = prefix / rel
        text = config.read_text(encoding="utf-8")
        if line not in text:
            config.write_text(text.rstrip("\n") + "\n\n# added by prebake: the asset's own "
                              "target, beside upstream's\n" + line + "\n", encoding="utf-8")
            changed.append(rel)
    return changed
