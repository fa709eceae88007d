"""Toolchain environments: a pinned compiler that lives in a Debian root prebake provisions.

The flagship's Emscripten 3.1.69 (with the CMake ≥ 3.28 and the host ``protoc`` onnxruntime
needs) is Debian 13's, and these machines run Debian 12. An environment (``environments.toml``,
data) names a Debian suite and its packages; ``prebake toolchain install`` makes the root with
``mmdebstrap`` from the mirror apt already uses and writes one wrapper per tool
(``prebake.toolchain.enter``). A platform whose toolchain says ``environment = "NAME"`` runs
its ``cc``/``cxx``/``ar`` through those wrappers, and its build commands find them first on
``PATH``; what the wrappers report is verified against the pin like any compiler, and the
versions of the environment's ``identity`` packages (read from the root's dpkg database) join
the toolchain's measured identity in input hashes and manifests.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from prebake.cachedir import default_cache_dir
from prebake.errors import PrebakeError
from prebake.machine_mirrors import apt_source_files, debian_mirrors
from prebake.names import did_you_mean
from prebake.redact import redact_text

DATA = "environments.toml"
MMDEBSTRAP_TIMEOUT = 1800
# dpkg's status file of a root holds a few thousand packages; bounded like every other read.
MAX_STATUS_BYTES = 64 << 20


def toolchains_dir() -> Path:
    """Where ``prebake toolchain install`` puts toolchains: ``$PREBAKE_TOOLCHAINS``, else
    ``toolchains/`` in prebake's cache (a CI cache may keep this one folder between runs)."""
    if env := os.environ.get("PREBAKE_TOOLCHAINS"):
        return Path(env)

    return default_cache_dir() / "toolchains"


@dataclass(frozen=True)
class Environment:
    name: str
    description: str
    suite: str
    packages: tuple[str, ...]
    tools: tuple[str, ...]
    identity: tuple[str, ...]
    # False: the suite's Release file may be past its Valid-Until (a frozen snapshot); only
    # that date check is relaxed, signatures are verified as always
    check_valid_until: bool = True
    # True: Emscripten builds its system libraries on first use into the root's cache, and
    # `toolchain install` builds the platform's variants then (prebake.toolchain.emwarm);
    # False: the cache is frozen (Debian 13's ships them built and refuses to build more)
    warm_system_libraries: bool = False

    @property
    def root(self) -> Path:
        return toolchains_dir() / f"env-{self.name}"

    @property
    def bin(self) -> Path:
        return self.root.with_name(self.root.name + ".bin")

    def installed(self) -> bool:
        return (self.root / "usr" / "bin").is_dir() and all(
            (self.bin / t).is_file() for t in self.tools)

    def wrapper(self, tool: str) -> Path:
        return self.bin / tool


@functools.cache
def environments() -> Mapping[str, Environment]:
    """The shipped table, validated once."""
    text = resources.files("prebake.toolchain").joinpath(DATA).read_text()
    out: dict[str, Environment] = {}
    for name, row in tomllib.loads(text).items():
        out[name] = Environment(name, str(row.get("description", "")), str(row["suite"]),
                                tuple(row["packages"]), tuple(row["tools"]),
                                tuple(row["identity"]),
                                bool(row.get("check_valid_until", True)),
                                bool(row.get("warm_system_libraries", False)))
    return out


def environment_named(name: str) -> Environment:
    envs = environments()
    if name not in envs:
        raise PrebakeError(f"unknown toolchain environment {name!r}{did_you_mean(name, envs)}"
                           f" (known: {', '.join(envs)})")
    return envs[name]


def resolve(argv: tuple[str, ...], env_name: str | None) -> tuple[str, ...]:
    """``argv`` with its command replaced by the environment's wrapper (when installed; a
    missing wrapper stays a bare name, which the probe then reports as not found)."""
    if not env_name or not argv or "/" in argv[0]:
        return argv
    env = environment_named(env_name)
    _current_wrappers(env)
    wrapper = env.wrapper(argv[0])
    return (str(wrapper), *argv[1:]) if wrapper.is_file() else argv


def path_with(env_name: str | None, path: str) -> str:
    """``PATH`` with the environment's wrappers first (build commands run its cmake, python3…)."""
    if not env_name:
        return path
    env = environment_named(env_name)
    _current_wrappers(env)
    return f"{env.bin}:{path}"


@functools.cache
def _current_wrappers(env: Environment) -> None:
    """Rewrite an installed root's wrappers when they name another interpreter than this one.

    A wrapper execs the Python that wrote it; a root shared by two checkouts (the test cache,
    or a CI cache restored into a new venv) would otherwise run a deleted interpreter, and the
    build would fail with a bare "not found" from inside the wrapper. Once per process.
    """
    if (env.root / "usr" / "bin").is_dir():
        _rewrite_wrappers(env)


def _rewrite_wrappers(env: Environment) -> None:
    """``write_wrappers``, its failure one line naming the folder."""
    try:
        write_wrappers(env)
    except OSError as exc:
        raise PrebakeError(f"{env.bin}: cannot bring the environment's wrappers to this "
                           f"interpreter ({exc.strerror})") from None


def not_installed(env_name: str, platform: str) -> str:
    return (f"toolchain environment {env_name} is not installed: run "
            f"`prebake toolchain install --platform {platform}`")


def identity(env_name: str) -> str:
    """The versions of the environment's identity packages, from its root's dpkg database."""
    env = environment_named(env_name)
    status = env.root / "var" / "lib" / "dpkg" / "status"
    try:
        with open(status, "rb") as fh:
            text = fh.read(MAX_STATUS_BYTES + 1).decode("utf-8", "replace")
    except OSError as exc:
        raise PrebakeError(f"{status}: cannot read the environment's package list "
                           f"({exc.strerror})") from None
    if len(text) > MAX_STATUS_BYTES:
        raise PrebakeError(f"{status}: larger than {MAX_STATUS_BYTES} bytes")
    versions = {}
    for block in text.split("\n\n"):
        pkg = re.search(r"^Package: (\S+)", block, re.M)
        ver = re.search(r"^Version: (\S+)", block, re.M)
        if pkg and ver and "install ok installed" in block:
            versions[pkg.group(1)] = ver.group(1)
    parts = [f"{p} {versions.get(p, 'absent')}" for p in env.identity]
    relaxed = "" if env.check_valid_until else "; Release date check relaxed, signatures verified"
    return f"{env.name} ({env.suite}{relaxed}): " + ", ".join(parts)


# apt's words for an archive that does not verify against the keyring (unsigned, unknown key,
# bad signature): provisioning from it is refused as bad input, never retried without checks
_UNVERIFIED = re.compile(r"^E: .*(?:is not signed|NO_PUBKEY|BADSIG|signatures? (?:were|was) "
                         r"invalid|couldn't be verified|not valid|clearsigned)", re.M | re.I)


def debian_mirror() -> str | None:
    """The Debian mirror to bootstrap from: the first of ``prebake.machine_mirrors``'s
    (``$PREBAKE_DEBIAN_MIRROR``, as CI sets it for a runner whose own apt is not Debian's, else
    the first Debian archive among apt's sources, never a security one), the mirror source
    downloads of ``debian:`` references use too. Either way the archive's signatures are
    verified against Debian's keyring."""
    found = debian_mirrors(os.environ)
    return found[0].url if found else None


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "making a Debian root needs root (mmdebstrap, mount, chroot)"
    for tool in ("mmdebstrap", "unshare", "mount"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt-get install mmdebstrap util-linux mount)"
    if debian_mirror() is None:
        files = " or ".join(map(str, apt_source_files(os.environ))) or "apt's sources"
        return f"no Debian mirror in {files} (or set PREBAKE_DEBIAN_MIRROR)"
    return None


def write_wrappers(env: Environment) -> None:
    """One script per tool: enter the root in a private mount namespace and run the tool."""
    env.bin.mkdir(parents=True, exist_ok=True)
    for tool in env.tools:
        text = ("#!/bin/sh\n"
                f"# prebake toolchain environment {env.name}: {tool} inside {env.root}\n"
                f"exec unshare --mount --propagation private {shlex.quote(sys.executable)} "
                f"-m prebake.toolchain.enter {shlex.quote(str(env.root))} {shlex.quote(tool)}"
                ' "$@"\n')
        path = env.wrapper(tool)
        if not path.is_file() or path.read_text() != text:
            tmp = path.with_name(f".{tool}.tmp{os.getpid()}")
            tmp.write_text(text)
            tmp.chmod(0o755)
            tmp.replace(path)


# Debian's archive keys as the debian-archive-keyring package installs them. A Debian machine's
# apt trusts them already; an Ubuntu runner's apt trusts only Ubuntu's, so the sources line names
# this keyring itself (signatures are verified either way, against Debian's own keys).
DEBIAN_KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")


def mmdebstrap_argv(env: Environment, dest: Path) -> list[str]:
    argv = ["mmdebstrap", "--variant=apt", f"--include={','.join(env.packages)}"]
    if not env.check_valid_until:
        # the date check only: no AllowInsecureRepositories, no --no-check-gpg
        argv.append('--aptopt=Acquire::Check-Valid-Until "false"')
    signed = f"[signed-by={DEBIAN_KEYRING}] " if DEBIAN_KEYRING.is_file() else ""
    return [*argv, env.suite, str(dest), f"deb {signed}{debian_mirror()} {env.suite} main"]


def install(env: Environment) -> tuple[bool, str]:
    """Make the root (when missing) and its wrappers: (True, what was done) or (False, why)."""
    if (env.root / "usr" / "bin").is_dir():
        _rewrite_wrappers(env)
        return True, f"environment {env.name} already in {env.root}"
    why = _why_not()
    if why:
        return False, f"cannot make environment {env.name}: {why}"
    tmp = env.root.with_name(env.root.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.parent.mkdir(parents=True, exist_ok=True)
    argv = mmdebstrap_argv(env, tmp)
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, errors="replace",
                              timeout=MMDEBSTRAP_TIMEOUT, check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        return False, f"mmdebstrap for {env.name} failed: {exc}"
    if proc.returncode != 0 or not (tmp / "usr" / "bin").is_dir():
        shutil.rmtree(tmp, ignore_errors=True)
        unverified = _UNVERIFIED.search(f"{proc.stderr}\n{proc.stdout}")
        if unverified:
            said = redact_text(unverified.group(0)[3:].strip())
            raise PrebakeError(
                f"toolchain environment {env.name}: {said}: "
                f"the {env.suite} archive at {redact_text(str(debian_mirror()))} does not verify "
                "against Debian's keyring; nothing installed")
        tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
        return False, f"mmdebstrap for {env.name} failed (exit {proc.returncode}): {tail}"
    tmp.rename(env.root)
    write_wrappers(env)
    return True, f"environment {env.name} ({env.suite}) made in {env.root}"
