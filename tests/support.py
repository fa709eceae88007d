"""Test helpers: run real toolchains, cache what they build, locate the npm test data.

Everything a test builds lands in a content-addressed cache (``.cache/tests`` in the checkout,
or ``$PREBAKE_TEST_CACHE``), keyed by the commands and source texts, so a second run of the
suite reuses binaries and the suite stays within CI's budget.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from prebake.errors import PrebakeError
from prebake.link import wine

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("PREBAKE_TEST_CACHE", ROOT / ".cache" / "tests"))
NPM_PACKAGES = {"web": "onnxruntime-web@1.30.0", "node": "onnxruntime-node@1.30.0"}


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold the lock file ``path`` exclusively: test processes running side by side (pytest's
    workers, two checkouts sharing one cache) fill one cache entry once."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def cache_lock(name: str) -> contextlib.AbstractContextManager[None]:
    """``locked`` on ``CACHE/locks/NAME.lock``."""
    return locked(CACHE / "locks" / f"{name}.lock")


def tool_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A clean environment for toolchains: PATH/HOME only, plus what the toolchains need."""
    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "TMPDIR") if k in os.environ}
    # Debian's emscripten finds acorn there (docs/toolchains.md)
    env["NODE_PATH"] = "/usr/share/nodejs"
    env["ZIG_GLOBAL_CACHE_DIR"] = str(CACHE / "zig")
    env["ZIG_LOCAL_CACHE_DIR"] = str(CACHE / "zig-local")
    env["EM_CACHE"] = str(em_cache())
    if extra:
        env.update(extra)
    return env


DEBIAN_EM_CACHE = Path("/usr/share/emscripten/cache")


def em_cache() -> Path:
    """A private Emscripten cache that reuses Debian's prebuilt, frozen one.

    Debian sets ``FROZEN_CACHE = True``: an empty ``EM_CACHE`` makes every ``emcc`` fail with
    "cache file is missing: sysroot_install.stamp", and unfreezing it would rebuild every system
    library (minutes per variant). Symlinking the prebuilt entries keeps the lock file private.
    """
    cache = CACHE / "emcache"
    cache.mkdir(parents=True, exist_ok=True)
    if DEBIAN_EM_CACHE.is_dir():
        for entry in DEBIAN_EM_CACHE.iterdir():
            link = cache / entry.name
            if entry.name != "cache.lock" and not link.is_symlink() and not link.exists():
                with contextlib.suppress(FileExistsError):  # another process made it first
                    link.symlink_to(entry)
    return cache


def run(cmd: Sequence[str], cwd: Path, env: Mapping[str, str] | None = None,
        check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(list(cmd), cwd=cwd, env=tool_env(env), capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise AssertionError(
            f"command failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stdout}\n{proc.stderr}"
        )
    return proc


def prebake(*args: str | Path, env: Mapping[str, str] | None = None, timeout: float = 600
            ) -> subprocess.CompletedProcess[str]:
    """``python -m prebake ARGS`` in a clean toolchain environment, output captured."""
    return subprocess.run([sys.executable, "-m", "prebake", *map(str, args)],
                          env=tool_env(env), capture_output=True, text=True, timeout=timeout)


ZIG = [sys.executable, "-m", "ziglang"]
# The suite's one Wine prefix (~700 MB, made once by the first test that runs a Windows
# program, under a lock; every worker and every re-run of CI reuses it)
WINE_PREFIX = CACHE / "wine"


def run_windows(program: Path, *args: str, dll_dirs: Sequence[Path] = (),
                cwd: Path | None = None) -> wine.WineRun:
    """A Windows program run under Wine (``prebake.link.wine``) in the suite's prefix; Wine
    missing is a failure, as any tool ``scripts/bootstrap`` installs."""
    try:
        wine.wine()
    except PrebakeError as exc:
        pytest.fail(str(exc))
    return wine.run(program, args, prefix=WINE_PREFIX, dll_dirs=dll_dirs, cwd=cwd)


def producer_pin(platform: Any, pins: Mapping[str, str] | None = None) -> Any:
    """The platform's compiler, verified here and read as the contract's ``producer`` rule
    holds binaries to it (``prebake.toolchain.producer_pin``): what a build's guard or
    ``prebake check --platform`` gives ``check_paths``."""
    from prebake.toolchain.producer_pin import pin_for
    from prebake.toolchain.verify import verify_platform
    from prebake.variables import sanitized

    verdict = verify_platform(platform, pins or {})
    return pin_for(verdict, sanitized(None, platform_env=platform.env,
                                      unset=platform.env_unset))


def build(name: str, sources: Mapping[str, str], commands: Sequence[Sequence[str]],
          env: Mapping[str, str] | None = None) -> Path:
    """Write ``sources`` into a fresh folder, run ``commands`` there, cache the folder.

    Returns the folder; outputs are wherever the commands put them inside it. The cache key
    covers the source texts and the command lines, so editing either rebuilds.
    """
    h = hashlib.sha256()
    for fname in sorted(sources):
        h.update(fname.encode() + b"\0" + sources[fname].encode() + b"\0")
    for cmd in commands:
        h.update("\x1f".join(cmd).encode() + b"\0")
    for k, v in sorted((env or {}).items()):
        h.update(f"{k}={v}".encode() + b"\0")
    out = CACHE / "builds" / f"{name}-{h.hexdigest()[:16]}"
    if (out / ".done").exists():
        return out
    # a private temp folder: suites in several checkouts may share one $PREBAKE_TEST_CACHE
    tmp = out.with_name(f"{out.name}.tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for fname, text in sources.items():
        (tmp / fname).parent.mkdir(parents=True, exist_ok=True)
        (tmp / fname).write_text(text)
    for cmd in commands:
        run(cmd, tmp, env)
    (tmp / ".done").write_text("ok\n")
    if (out / ".done").exists():  # another process finished the same build first
        shutil.rmtree(tmp, ignore_errors=True)
        return out
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out


def registry_file(ref: str, dest: Path) -> Path:
    """The file a registry reference (``debian:``, ``pypi:``, ``npm:``) names, downloaded into
    the folder ``dest`` under its own name through prebake's resolver: this machine's apt,
    pip and npm configuration, as a build would fetch it (no host written here)."""
    from prebake.sources.cache import SourceCache
    from prebake.sources.download import download_new
    from prebake.sources.mirrors import Resolver

    cache = SourceCache(CACHE / "registry-downloads", Resolver())
    got, failures = download_new([ref], cache)
    if got is None:
        raise AssertionError(f"{ref}: no configured mirror served it: {'; '.join(failures)}")
    dest.mkdir(parents=True, exist_ok=True)
    name = got.url.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
    final = dest / name
    tmp = final.with_name(f"{name}.tmp{os.getpid()}")
    got.path.replace(tmp)
    tmp.replace(final)
    return final


def npm_package(which: str) -> Path:
    """The unpacked ``package/`` folder of an onnxruntime npm prebuilt ("web" or "node"),
    fetched once through the machine's npm registry (``registry_file``); later runs use the
    cache."""
    with cache_lock(f"npm-{which}"):
        spec = NPM_PACKAGES[which]
        base = CACHE / "npm" / spec.replace("@", "-")
        pkg = base / "package"
        if (base / ".done").exists():
            return pkg
        tgz = registry_file(f"npm:{spec}", base)
        with tarfile.open(tgz) as tf:
            tf.extractall(base, filter="data")
        tgz.unlink()
        (base / ".done").write_text("ok\n")
        return pkg


NODE24 = "node@24"  # the long leg's Node 24 too (scripts/long-leg)


def node24() -> Path:
    """Node 24 from the npm registry (``npm install node@24``, the long leg's way: Debian 12's
    node is 20), installed once into the test cache; the ``node`` program's path."""
    with cache_lock("npm-node24"):
        base = CACHE / "npm-node24"
        node = base / "node_modules" / ".bin" / "node"
        if (base / ".done").exists() and node.exists():
            return node
        base.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(["npm", "install", "--silent", "--no-audit", "--no-fund",
                               "--prefix", str(base), NODE24], capture_output=True, text=True)
        if proc.returncode != 0 or not node.exists():
            raise AssertionError(f"npm install {NODE24} failed: {proc.stderr}")
        (base / ".done").write_text("ok\n")
        return node


def debian_orig(source: str, version: str, suffix: str = "tar.xz") -> Path:
    """Debian's ``<source>_<version>.orig.<suffix>`` from the pool (real upstream source),
    downloaded once into the test cache through the machine's Debian mirror."""
    name = f"{source}_{version}.orig.{suffix}"
    dest = CACHE / "debian" / name
    if dest.is_file():
        return dest
    folder = source[:4] if source.startswith("lib") else source[0]
    return registry_file(f"debian:pool/main/{folder}/{source}/{name}", dest.parent)


def npm_tarball(which: str) -> Path:
    """The ``.tgz`` itself of an onnxruntime npm prebuilt, as the registry serves it (cached)."""
    with cache_lock(f"npm-tgz-{which}"):
        spec = NPM_PACKAGES[which]
        base = CACHE / "npm-tgz" / spec.replace("@", "-")
        done = base / ".done"
        if done.exists():
            return base / done.read_text().strip()
        got = registry_file(f"npm:{spec}", base)
        done.write_text(got.name + "\n")
        return got


PYPI_WHEEL = "pypi:onnxruntime==1.27.0#cp311-cp311-manylinux_2_28_x86_64"


def pypi_wheel() -> Path:
    """The onnxruntime 1.27.0 manylinux x86_64 wheel, through the machine's PyPI index
    (``registry_file``, cached)."""
    with cache_lock("pypi-wheel"):
        base = CACHE / "pypi" / "onnxruntime-1.27.0"
        done = base / ".done"
        if done.exists():
            return base / done.read_text().strip()
        got = registry_file(PYPI_WHEEL, base)
        done.write_text(got.name + "\n")
        return got


def valid_manifest(name: str = "demo", version: str = "1.0.0", platform: str = "linux-x86_64",
                   *, input_hash: str = "0" * 64, **fields: object) -> dict[str, object]:
    """A complete manifest that passes ``schemas/manifest.schema.json``, for tests that write a
    store's sidecar by hand; ``fields`` add or replace top-level keys (``files=[…]``…)."""
    out: dict[str, object] = {
        "schema_version": 1, "name": name, "version": version, "platform": platform,
        "input_hash": input_hash, "toolchain": {"cc": ["gcc"], "cxx": ["g++"], "ar": ["ar"],
                                                "pin": None, "pin_version": None,
                                                "version": None},
        "facts": [], "files": [], "link_order": [], "recipes": [],
        "created_by": "prebake test",
    }
    out.update(fields)
    return out


# Upstream sources from Debian's archive (the .orig tarballs): pool path -> sha256.
DEBIAN_ORIG = {
    "libz/libzstd/libzstd_1.5.4+dfsg2.orig.tar.xz":
        "8cf4bbb65e77ec348d052c8d6230eba66d435bddf64c8b5be2fcb16880c19953",
    "libz/libzstd/libzstd_1.5.7+dfsg.orig.tar.xz":
        "0c092ef267edce57ba7f3f2645c861f72eaf5e76273c6c3632869423464b90a5",
    "a/abseil/abseil_20240722.0.orig.tar.gz":
        "df6d1f5ef540725f3851201176a60486aab332410788465c9877910bb471c34a",
}
def debian_ref(pool: str) -> str:
    """The registry reference of a Debian pool file (a key of ``DEBIAN_ORIG``), for a recipe."""
    return f"debian:pool/main/{pool}"


def debian_pool(pool: str) -> Path:
    """A Debian ``.orig`` tarball (a key of ``DEBIAN_ORIG``), downloaded once and verified."""
    sha = DEBIAN_ORIG[pool]
    dest = CACHE / "debian" / pool.rsplit("/", 1)[-1]
    if dest.is_file() and hashlib.sha256(dest.read_bytes()).hexdigest() == sha:
        return dest
    got = registry_file(debian_ref(pool), dest.parent)
    if hashlib.sha256(got.read_bytes()).hexdigest() != sha:
        got.unlink()
        raise AssertionError(f"{debian_ref(pool)}: the mirror's bytes are not sha256 {sha}")
    return got


def seed_source_cache(cache: Path, pool: str) -> None:
    """Put a Debian tarball into a prebake source cache (``<cache>/sources/<sha256>``), so a
    recipe naming its reference (``debian_ref``) with that sha256 builds without downloading
    again."""
    entry = cache / "sources" / DEBIAN_ORIG[pool]
    if not entry.is_file():
        entry.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(debian_pool(pool), entry)


def tree_digest(*roots: Path, suffixes: tuple[str, ...] = (".py", ".cmake", ".json")) -> str:
    """A digest of the files below ``roots`` (for keying cached builds on prebake's code)."""
    h = hashlib.sha256()
    for root in roots:
        for p in sorted(root.rglob("*")):
            if p.is_file() and p.suffix in suffixes and "__pycache__" not in p.parts:
                h.update(p.relative_to(root).as_posix().encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:16]


def cached_prebake_build(name: str, files: Mapping[str, str], args: Sequence[str],
                         env: Mapping[str, str] | None = None, subdir: str = "ws",
                         timeout: float = 1800) -> tuple[Path, int, dict[str, Any]]:
    """``prebake -C WS ARGS --json`` on a workspace made of ``files``, cached by content.

    The workspace lives in its own folder of the test cache (``subdir`` sets how deep, so two
    names give two different paths); the key covers the files, the arguments and prebake's
    own code, so a test session builds each once and a code change rebuilds. The work folder
    is removed afterwards (the assets in ``releases/`` and the result stay).
    """

    h = hashlib.sha256()
    for fname in sorted(files):
        h.update(fname.encode() + b"\0" + files[fname].encode() + b"\0")
    h.update("\0".join([*args, subdir, tree_digest(ROOT / "src" / "prebake")]).encode())
    for k, v in sorted((env or {}).items()):
        h.update(f"{k}={v}".encode() + b"\0")
    out = CACHE / "builds" / f"{name}-{h.hexdigest()[:16]}"
    with cache_lock(out.name):
        return _cached_build(out, subdir, files, args, env, timeout)


def _cached_build(out: Path, subdir: str, files: Mapping[str, str], args: Sequence[str],
                  env: Mapping[str, str] | None, timeout: float
                  ) -> tuple[Path, int, dict[str, Any]]:
    import json

    ws = out / subdir
    if (out / "result.json").is_file():
        res = json.loads((out / "result.json").read_text())
        return ws, int(res["rc"]), dict(res["data"])
    shutil.rmtree(out, ignore_errors=True)
    for fname, text in files.items():
        (ws / fname).parent.mkdir(parents=True, exist_ok=True)
        (ws / fname).write_text(text)
    proc = prebake("-C", ws, *args, "--json", env=env, timeout=timeout)
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        raise AssertionError(f"no JSON (rc {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
                             ) from None
    shutil.rmtree(ws / ".prebake" / "work", ignore_errors=True)
    (out / "result.json").write_text(json.dumps({"rc": proc.returncode, "data": data}))
    return ws, proc.returncode, data


WORKSPACES = ROOT / "tests" / "data" / "workspaces"
# A workspace's windows-x86_64 platform with Debian's MinGW-w64 (prebake.toml text).
MINGW_PLATFORM = """\
[platforms.windows-x86_64]
os = "windows"
arch = "x86_64"
env_unset = ["CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS"]
contract = { lto = "none" }

[platforms.windows-x86_64.toolchain]
cc = "x86_64-w64-mingw32-gcc"
cxx = "x86_64-w64-mingw32-g++"
ar = "x86_64-w64-mingw32-ar"
"""
# Debian's emcc held to the host's threads and SIMD128 (prebake.toml text): a wasm platform whose
# contract's ABI flags must reach every compile of a build system's generated file.
EMCC_WASM_PLATFORM = """\
[platforms.wasm]
os = "emscripten"
arch = "wasm32"
env_unset = ["CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "EMCC_CFLAGS"]
contract = { extends = "emscripten-wasm-eh-pthread-simd" }

[platforms.wasm.toolchain]
cc = "emcc"
cxx = "em++"
ar = "emar"

[platforms.wasm.link_test]
flags = ["-fwasm-exceptions", "-pthread", "-msimd128"]
"""
PTHREAD_LINK = '\n[platforms.linux-x86_64.link_test]\nflags = ["-pthread"]\n'
PLAIN_LINK = "\n[platforms.linux-x86_64.link_test]\nflags = []\n"
LOCAL_STORE = '\n[stores.local]\nurl = "file://./releases"\ndefault = true\n'
ENV_UNSET = ("CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS")


def workspace_text(template: str, **values: str) -> str:
    """``tests/data/workspaces/templates/TEMPLATE.toml`` with its ``$names`` filled from
    ``values`` (``string.Template``: the ``{…}`` placeholders prebake itself reads stay)."""
    import string

    text = (WORKSPACES / "templates" / f"{template}.toml").read_text()
    return string.Template(text).substitute(values)


def gcc_workspace(name: str, pins: str, stage: str, recipes: str, *,
                  contract: str = 'lto = "none"', more: str = PTHREAD_LINK,
                  version: str = "1.0.0", env_unset: Sequence[str] = ENV_UNSET,
                  package: str = "per-recipe", tail: str = LOCAL_STORE) -> str:
    """The ``prebake.toml`` of a one-stage workspace building for linux-x86_64 with Debian's
    gcc (``tests/data/workspaces/templates/linux-gcc.toml``): ``pins`` and ``contract`` are
    TOML lines, ``recipes`` a TOML list, ``more`` the tables after the contract (the link
    test, another platform), ``tail`` those after the stage (the local store; ``[ci]``, or
    none: the default store).

    One template rather than a pasted text per test: the tests differ only in these values
    (the variables ``env_unset`` clears, how the stage packages), and a change to the workspace
    format is then made once.
    """
    text = workspace_text("linux-gcc", name=name, version=version, pins=pins, stage=stage,
                          recipes=recipes, contract=contract, more=more,
                          env_unset=", ".join(f'"{v}"' for v in env_unset), package=package,
                          tail=tail)
    return text.rstrip("\n") + "\n"


def platform_workspace(name: str, platform: str, os: str, arch: str, toolchain: str,
                       contract: str, *, more: str = "", version: str = "0.1.0") -> str:
    """The ``prebake.toml`` of a workspace of one platform and no stage, for the commands that
    read only a platform (``check --platform``, ``link-test``, a consumer's ``fetch``) and for
    the contract's load errors (``tests/data/workspaces/templates/one-platform.toml``):
    ``toolchain`` is the inside of a TOML inline table, ``contract`` TOML lines (without
    ``more``, the first stands at line 11), ``more`` lines of the platform's own keys
    (``link_test``, ``env``)."""
    return workspace_text("one-platform", name=name, version=version, platform=platform, os=os,
                          arch=arch, toolchain=toolchain, contract=contract, more=more)


def wasm_check_workspace(folder: Path, name: str, contract: str) -> Path:
    """``folder`` made a workspace of one wasm platform (Debian's emcc) whose contract is
    ``contract`` (TOML lines), for ``prebake check --platform wasm``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "prebake.toml").write_text(platform_workspace(
        name, "wasm", "emscripten", "wasm32", 'cc = "emcc", cxx = "em++", ar = "emar"', contract))
    return folder
