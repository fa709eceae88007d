"""``prebake init``: a working workspace for the platforms this machine can build.

A new user's first question is "what do I write in prebake.toml?", and a skeleton that names a
compiler the machine does not have, or pins a release nobody measured, fails at the first
``prebake build``. So every platform of the skeleton is one whose compiler answered here, its
toolchain pin is the release that compiler reported, and its contract is a shipped preset
(the glibc floor at the host's own glibc). The candidates are data (``platforms.toml``); the
files are templates (``files/``) so the comments a user reads live next to the layout.
"""

from __future__ import annotations

import os
import platform as host_platform
import re
import shlex
import sys
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prebake.contract.presets import preset_names
from prebake.errors import PrebakeError
from prebake.intake.loader import PROJECT_NAME
from prebake.jsonio import atomic_write_text
from prebake.model.families import family_of_argv
from prebake.names import check_name
from prebake.toolchain.probe import PROBER

HERE = Path(__file__).resolve().parent
FILES = HERE / "files"
_PROJECT = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True)
class Candidate:
    """One row of ``platforms.toml``: a platform ``init`` writes when its compiler answers."""

    name: str
    os: str
    arch: str
    cc: str
    cxx: str
    ar: str
    pin: str
    cflags: str
    runner: str
    preset: str | None = None
    contract: Mapping[str, Any] = field(default_factory=dict)
    link_flags: tuple[str, ...] = ()
    env_unset: tuple[str, ...] = ()
    host_arch: str | None = None


@dataclass(frozen=True)
class Detected:
    """A candidate whose compiler answered: the release it reported and the preset it gets."""

    candidate: Candidate
    version: str
    version_line: str
    preset: str | None

    @property
    def title(self) -> str:
        return f"{self.candidate.name}: {self.version_line}"


def candidates() -> list[Candidate]:
    data = tomllib.loads((HERE / "platforms.toml").read_text(encoding="utf-8"))
    out = []
    for row in data["platform"]:
        row = dict(row)
        for key in ("link_flags", "env_unset"):
            row[key] = tuple(row.get(key, ()))
        out.append(Candidate(**row))
    return out


def _argv(command: str) -> list[str]:
    return [sys.executable if w == "{python}" else w for w in shlex.split(command)]


def host_glibc() -> tuple[int, int] | None:
    """The host's glibc (``os.confstr``), or None on a machine without one."""
    try:
        text = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (ValueError, OSError):
        return None
    m = re.search(r"(\d+)\.(\d+)", text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def glibc_preset(arch: str, names: Sequence[str], glibc: tuple[int, int] | None) -> str | None:
    """The shipped ``manylinux_2_NN_<arch>`` preset with the highest floor the host meets."""
    if glibc is None:
        return None
    best: tuple[int, str] | None = None
    for name in names:
        m = re.fullmatch(rf"manylinux_2_(\d+)_{re.escape(arch)}", name)
        if m and (2, int(m.group(1))) <= glibc and (best is None or int(m.group(1)) > best[0]):
            best = (int(m.group(1)), name)
    return best[1] if best else None


def detect(env: Mapping[str, str], *, machine: str | None = None) -> list[Detected]:
    """The candidates whose C++ compiler answers with a release, first row per name."""
    arch = machine or host_platform.machine()
    arch = {"amd64": "x86_64", "arm64": "aarch64"}.get(arch.lower(), arch)
    names = preset_names()
    glibc = host_glibc()
    found: dict[str, Detected] = {}
    for cand in candidates():
        if cand.name in found or (cand.host_arch and cand.host_arch != arch):
            continue
        argv = _argv(cand.cxx)
        measured = PROBER.measure(argv, env, family_of_argv(argv))
        if not measured.found or measured.version is None:
            continue
        preset = glibc_preset(cand.arch, names, glibc) if cand.preset == "glibc" else cand.preset
        if cand.preset == "glibc" and preset is None:
            continue  # no floor we could state honestly
        found[cand.name] = Detected(cand, measured.version, measured.version_line, preset)
    return list(found.values())


def project_name(folder: Path) -> str:
    """A project name from the folder's name (``My SDK`` -> ``my-sdk``), usable in asset names."""
    words = [w for w in _PROJECT.split(folder.resolve().name.lower()) if w]
    name = "-".join(words)
    return name if name and PROJECT_NAME.match(name) and name[0].isalpha() else "my-sdk"


def check_project(name: str) -> None:
    """The loader's rule for ``[project] name``, applied before anything is written."""
    check_name(name, "--name")
    if not PROJECT_NAME.match(name):
        raise PrebakeError(f"--name: {name!r} is not usable in an asset name (a dash must be "
                           "followed by a letter: the version follows the last dash)")


def render(detected: Sequence[Detected], project: str) -> dict[str, str]:
    """Relative path -> text of every file of the skeleton."""
    import jinja2  # lazy: 40 ms to import (-X importtime), paid only when files are written

    jenv = jinja2.Environment(loader=jinja2.FileSystemLoader(str(FILES)),
                              keep_trailing_newline=True, autoescape=False,
                              undefined=jinja2.StrictUndefined)
    pins: dict[str, str] = {}
    pin_commands: dict[str, str] = {}
    platforms = []
    for d in detected:
        c = d.candidate
        pins.setdefault(c.pin, d.version)
        pin_commands.setdefault(c.pin, c.cxx.replace("{python}", "python"))
        platforms.append({
            "name": c.name, "title": d.title, "os": c.os, "arch": c.arch, "cc": c.cc,
            "cxx": c.cxx, "ar": c.ar, "pin": c.pin, "preset": d.preset,
            "contract": dict(c.contract), "cflags": c.cflags, "runner": c.runner,
            "link_flags": list(c.link_flags), "env_unset": list(c.env_unset),
        })
    values = {"project": project, "pins": pins, "pin_commands": pin_commands,
              "platforms": platforms}
    out: dict[str, str] = {}
    for tpl in sorted(p for p in FILES.rglob("*") if p.is_file()):
        rel = tpl.relative_to(FILES).as_posix()
        if rel.endswith(".j2"):
            out[rel[: -len(".j2")]] = jenv.get_template(rel).render(**values)
        else:
            out[rel] = tpl.read_text(encoding="utf-8")
    return out


def write(dest: Path, files: Mapping[str, str]) -> list[Path]:
    """Write the skeleton into ``dest``; refuses to overwrite anything that exists."""
    dest = Path(dest)
    clash = [rel for rel in files if (dest / rel).exists()]
    if clash:
        raise PrebakeError(f"{dest / clash[0]}: already exists (prebake init writes a new "
                           "workspace and never overwrites a file)")
    written = []
    for rel, text in files.items():
        path = dest / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, text)
        written.append(path)
    return written
