"""``prebake toolchain install``: put a pinned toolchain into prebake's cache, exactly.

What a package registry can provide is installed at the pinned version only: zig from PyPI
(``pip install --target <cache>/toolchains/ziglang-<pin> ziglang==<pin>``; the platform then
runs that zig instead of whatever ``python -m ziglang`` would import), emsdk through the emsdk
repository (``emsdk install <pin>``) where GitHub is reachable — CI runners, not these
machines. Everything else is said plainly: nothing is installed at a version nobody pinned.
"""

from __future__ import annotations

import enum
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from prebake.model.families import Family, family_of_argv, pin_matches
from prebake.model.workspace import Platform, Workspace
from prebake.toolchain.emwarm import warm
from prebake.toolchain.environment import environment_named, install, toolchains_dir
from prebake.toolchain.probe import installed_emsdk, installed_zig

EMSDK_REPOSITORY = "https://github.com/emscripten-core/emsdk"
INSTALL_TIMEOUT = 1800


class Outcome(enum.Enum):
    INSTALLED = "installed"
    PRESENT = "present"
    CANNOT = "cannot"
    NOTHING = "nothing"  # the family comes from the system (gcc, clang, a Debian package)


@dataclass(frozen=True)
class Provisioned:
    platform: str
    family: str | None
    version: str | None
    outcome: Outcome
    message: str
    path: str | None = None

    def to_json(self) -> dict[str, object]:
        return {"platform": self.platform, "family": self.family, "version": self.version,
                "outcome": self.outcome.value, "message": self.message, "path": self.path}


def _run(argv: list[str], cwd: Path | None = None) -> tuple[int, str]:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, errors="replace",
                              timeout=INSTALL_TIMEOUT, check=False, cwd=cwd,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return 127, f"{type(exc).__name__}: {exc}"
    tail = (proc.stderr or proc.stdout).strip().splitlines()
    return proc.returncode, (tail[-1] if tail else "")


def install_zig(version: str) -> tuple[Outcome, str, Path | None]:
    present = installed_zig(version)
    if present is not None:
        return Outcome.PRESENT, f"ziglang {version} already in {present.parent.parent}", present
    dest = toolchains_dir() / f"ziglang-{version}"
    tmp = dest.with_name(dest.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.parent.mkdir(parents=True, exist_ok=True)
    rc, last = _run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                     "--disable-pip-version-check", "--target", str(tmp),
                     f"ziglang=={version}"])
    exe = tmp / "ziglang" / "zig"
    if rc != 0 or not exe.is_file():
        shutil.rmtree(tmp, ignore_errors=True)
        return Outcome.CANNOT, f"pip could not install ziglang=={version}: {last}", None
    rc, out = _run([str(exe), "version"])
    if rc != 0 or not pin_matches(version, out):
        shutil.rmtree(tmp, ignore_errors=True)
        return Outcome.CANNOT, f"ziglang=={version} from PyPI reports {out!r}", None
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)
    return Outcome.INSTALLED, f"ziglang {version} from PyPI into {dest}", dest / "ziglang" / "zig"


def install_emsdk(version: str) -> tuple[Outcome, str, Path | None]:
    present = installed_emsdk(version)
    if present is not None:
        return Outcome.PRESENT, f"emsdk {version} already in {present.parents[2]}", present
    dest = toolchains_dir() / f"emsdk-{version}"
    tmp = dest.with_name(dest.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.parent.mkdir(parents=True, exist_ok=True)
    rc, last = _run(["git", "clone", "--quiet", "--depth", "1", EMSDK_REPOSITORY, str(tmp)])
    if rc != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        return (Outcome.CANNOT, f"cannot provision emsdk {version} here: the emsdk repository "
                f"({EMSDK_REPOSITORY}) is not reachable ({last or f'git exit {rc}'}); a CI "
                f"runner that reaches it runs this same install", None)
    for step in (["./emsdk", "install", version], ["./emsdk", "activate", "--embedded", version]):
        rc, last = _run(step, cwd=tmp)
        if rc != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            return Outcome.CANNOT, f"emsdk {' '.join(step[1:])} failed: {last}", None
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)
    exe = installed_emsdk(version)
    return Outcome.INSTALLED, f"emsdk {version} into {dest}", exe


def provision(ws: Workspace, platform: Platform) -> Provisioned:
    tc = platform.toolchain
    fam: Family | None = family_of_argv(tc.cc)
    name = platform.name
    if tc.environment:
        env = environment_named(tc.environment)
        present = env.installed()
        ok, msg = install(env)
        if ok and env.warm_system_libraries:
            # the system libraries the platform's links need, built now rather than by the
            # first unit that links (prebake.toolchain.emwarm)
            ok, said = warm(env, platform.link_test.flags)
            msg = f"{msg}; {said}"
        outcome = (Outcome.PRESENT if present else Outcome.INSTALLED) if ok else Outcome.CANNOT
        return Provisioned(name, fam.name if fam else None,
                           ws.pins.get(tc.pin) if tc.pin else None, outcome, f"{name}: {msg}",
                           str(env.bin) if ok else None)
    if fam is None or fam.provision == "none":
        what = fam.title if fam else "this compiler"
        return Provisioned(name, fam.name if fam else None, None, Outcome.NOTHING,
                           f"{name}: {what} comes from the system; prebake does not install it")
    if fam.provision == "xcode":
        return Provisioned(name, fam.name, None, Outcome.NOTHING,
                           f"{name}: {fam.title} comes with Xcode on a macOS machine (the "
                           "runner's image); prebake does not install it")
    if fam.provision == "apt":
        return Provisioned(name, fam.name, None, Outcome.NOTHING,
                           f"{name}: {fam.title} comes from Debian's {fam.package} package "
                           f"(apt-get install {fam.package}), not at a version prebake chooses")
    version = ws.pins.get(tc.pin) if tc.pin else None
    if version is None:
        return Provisioned(name, fam.name, None, Outcome.CANNOT,
                           f"{name}: {fam.title} has no pin; prebake installs only a pinned "
                           f"version (pin = \"NAME\" in [platforms.{name}.toolchain])")
    if fam.provision == "pypi":
        outcome, msg, path = install_zig(version)
    else:
        outcome, msg, path = install_emsdk(version)
    return Provisioned(name, fam.name, version, outcome, f"{name}: {msg}",
                       str(path) if path else None)
