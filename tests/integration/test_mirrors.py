"""One lock, two mirrors: sources named by registry reference build the same bytes from any
mirror the machine is configured with, and a mirror serving other bytes is refused.

A recipe takes zstd's source from Debian's pool (``debian:pool/main/libz/libzstd/…``, the real
``.orig.tar.xz``), a file of onnxruntime's PyPI wheel (``pypi:onnxruntime==1.27.0#…``) and
one of onnxruntime-web's npm tarball (``npm:onnxruntime-web@1.30.0``), all three real files
served from 127.0.0.1 in the registries' own layouts (``tests.servers.registries``: an apt
pool, a PyPI simple index, an npm registry document). The machine's apt, pip and npm point at
that mirror through their own configuration files (``APT_CONFIG`` and a ``.sources`` part, a
user ``pip.conf``, a user ``.npmrc``). ``prebake pin`` locks the three by reference; on a
second mirror with other names, other paths and PEP 691 JSON, the same workspace and lock
plan the same input hashes, build the same asset bytes, and a consumer's ``prebake fetch``
with the lock it wrote from the first build takes the second build's asset; a third mirror
that serves other bytes under the same names is refused, naming the reference, the lock's
digest and what came. Mirrors that take credentials (a Debian root and a PyPI index with
``user:password@``, an npm registry with an ``.npmrc`` token) get them, and no output, log,
lock or asset shows them. The flagship example's committed lock is made again, byte for byte,
by ``prebake pin`` on a machine whose mirrors have other names than the public registries'.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import tarfile
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import support
from tests.mirror_build import locked_files, mirror_of_lock
from tests.servers.registries import Paths, RegistryMirror, machine_config

ZSTD = "1.5.7+dfsg"
POOL = f"main/libz/libzstd/libzstd_{ZSTD}.orig.tar.xz"
WHEEL_TAG = "cp311-cp311-manylinux_2_28_x86_64"
REFS = (f"debian:pool/{POOL}", f"pypi:onnxruntime==1.27.0#{WHEEL_TAG}",
        "npm:onnxruntime-web@1.30.0")

TOML = support.gcc_workspace(
    "mirrored", f'zstd = "{ZSTD}"\nort = "1.27.0"\nortweb = "1.30.0"', "deps", '["zstd"]',
    env_unset=("CFLAGS", "CPPFLAGS", "LDFLAGS"), more="", tail=support.LOCAL_STORE)

RECIPE = '''\
"""zstd's lib/common from Debian's pool, with a file of a PyPI wheel and of an npm package."""

from prebake.recipes import Build, Outputs, Recipe, Snippet, UrlSource

COMMON = ("debug", "entropy_common", "error_private", "fse_decompress", "pool", "threading",
          "xxhash", "zstd_common")

RECIPE = Recipe(
    name="zstd",
    pin="zstd",
    pins=("ort", "ortweb"),
    sources=(
        UrlSource("debian:pool/main/libz/libzstd/libzstd_{version}.orig.tar.xz"),
        UrlSource("pypi:onnxruntime=={pins[ort]}#cp311-cp311-manylinux_2_28_x86_64",
                  dest="wheel", strip_components=0,
                  members=("onnxruntime-1.27.0.dist-info/METADATA",)),
        UrlSource("npm:onnxruntime-web@{pins[ortweb]}", dest="web", members=("package.json",)),
    ),
    platforms={"*": Build(commands=(
        "cmake -E make_directory {build}/obj {prefix}/lib {prefix}/include {prefix}/share",
        *(f"{{cc}} -O1 -fPIC -I{{src}}/lib -c {{src}}/lib/common/{c}.c -o {{build}}/obj/{c}.o"
          for c in COMMON),
        "{ar} rcs {prefix}/lib/libzstd.a " + " ".join(f"{{build}}/obj/{c}.o" for c in COMMON),
        "cmake -E copy {src}/lib/zstd.h {src}/lib/zstd_errors.h {prefix}/include",
        "cmake -E copy {work}/wheel/onnxruntime-{pins[ort]}.dist-info/METADATA "
        "{prefix}/share/onnxruntime-METADATA",
        "cmake -E copy {work}/web/package.json {prefix}/share/onnxruntime-web.json",
    ))},
    outputs=Outputs(libs={"*": ("lib/libzstd.a",)}, headers=("include/zstd.h",),
                    license="LICENSE"),
    link_test=Snippet(code="#include <zstd.h>\\nint main(void) { return ZSTD_versionNumber() "
                           "!= ZSTD_VERSION_NUMBER; }\\n", lang="c",
                      symbols=("ZSTD_versionNumber",)),
)
'''


def _fill(mirror: RegistryMirror, wheel: Path, web: Path, zstd: Path) -> RegistryMirror:
    mirror.add_debian(f"pool/{POOL}", zstd)
    mirror.add_wheel(wheel)
    mirror.add_npm("onnxruntime-web", "1.30.0", web)
    return mirror


def _workspace(folder: Path) -> Path:
    (folder / "recipes").mkdir(parents=True)
    (folder / "prebake.toml").write_text(TOML)
    (folder / "recipes" / "zstd.py").write_text(RECIPE)
    return folder


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _hashes(ws: Path, env: dict[str, str]) -> dict[str, str]:
    proc = support.prebake("-C", ws, "plan", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    return {u["id"]: u["input_hash"] for u in json.loads(proc.stdout)["units"]}


@pytest.fixture(scope="module")
def files(ort_wheel: Path, ort_web_tgz: Path) -> tuple[Path, Path, Path]:
    return ort_wheel, ort_web_tgz, support.debian_orig("libzstd", ZSTD)


def test_the_same_lock_builds_the_same_bytes_from_another_mirror(
        files: tuple[Path, Path, Path], tmp_path: Path) -> None:
    wheel, web, zstd = files
    first = _fill(RegistryMirror(tmp_path / "a"), wheel, web, zstd)
    ws = _workspace(tmp_path / "ws")
    with first:
        env_a = {**machine_config(tmp_path / "home-a", first),
                 "PREBAKE_CACHE": str(tmp_path / "cache-a")}
        pin = support.prebake("-C", ws, "pin", "zstd", ZSTD, env=env_a)
        assert pin.returncode == 0, pin.stdout + pin.stderr
        lock_text = (ws / "prebake.sources.lock").read_text()
        lock = {e["url"]: (e["sha256"], e["size"])
                for e in tomllib.loads(lock_text)["source"]}
        assert lock == {REFS[0]: (_sha(zstd), zstd.stat().st_size),
                        REFS[1]: (_sha(wheel), wheel.stat().st_size),
                        REFS[2]: (_sha(web), web.stat().st_size)}
        assert "127.0.0.1" not in lock_text and "://" not in lock_text  # bytes, not hosts
        for ref in REFS:
            assert f"✓ locked {ref}" in pin.stdout, pin.stdout
        hashes = _hashes(ws, env_a)
        # a cache of its own: the build downloads, not only pin
        build = support.prebake("-C", ws, "build", "--json",
                                env={**env_a, "PREBAKE_CACHE": str(tmp_path / "cache-a2")})
        assert build.returncode == 0, build.stdout + build.stderr
        asset = next((ws / "releases").rglob("zstd-*-linux-x86_64.tar.xz"))
        built = _sha(asset)
        # the log names the URL actually used
        (log,) = (ws / ".prebake" / "logs").glob("zstd*.log")
        assert f"downloaded {first.debian}/pool/{POOL} " in log.read_text()
        consumer = tmp_path / "consumer"
        fetch = support.prebake("-C", ws, "fetch", f"zstd=={ZSTD}", "--platform",
                                "linux-x86_64", "--store", f"file://{ws / 'releases'}",
                                "--into", consumer / "a", "--lock", consumer / "prebake.lock",
                                env=env_a)
        assert fetch.returncode == 0, fetch.stdout + fetch.stderr
    served = len(first.requests)

    # another machine: other mirror names, paths and index format; the first mirror is gone
    second = _fill(RegistryMirror(tmp_path / "b", Paths("/archive/debian-main", "/pi/simple",
                                                        "/pi/packages", "/registry")),
                   wheel, web, zstd)
    other = tmp_path / "ws-b"
    shutil.copytree(ws, other, ignore=shutil.ignore_patterns("releases", ".prebake"))
    with second:
        env_b = {**machine_config(tmp_path / "home-b", second, suite="trixie"),
                 "PREBAKE_CACHE": str(tmp_path / "cache-b")}
        assert _hashes(other, env_b) == hashes  # a mirror is no input
        build = support.prebake("-C", other, "build", "--json", env=env_b)
        assert build.returncode == 0, build.stdout + build.stderr
        again = next((other / "releases").rglob("zstd-*-linux-x86_64.tar.xz"))
        assert _sha(again) == built
        assert (other / "prebake.sources.lock").read_text() == lock_text  # untouched
        # the consumer's lock from the first build takes the second build's asset
        fetch = support.prebake("-C", other, "fetch", f"zstd=={ZSTD}", "--platform",
                                "linux-x86_64", "--store", f"file://{other / 'releases'}",
                                "--into", consumer / "b", "--lock", consumer / "prebake.lock",
                                env=env_b)
        assert fetch.returncode == 0, fetch.stdout + fetch.stderr
        assert any(r.startswith("/pi/simple/onnxruntime/") for r in second.requests)
        assert any(r == "/registry/onnxruntime-web" for r in second.requests)
        assert any(r.startswith("/archive/debian-main/pool/") for r in second.requests)
    assert len(first.requests) == served  # nothing more was asked of the first mirror
    for path in (consumer / "a").rglob("*"):
        if path.is_file():
            twin = consumer / "b" / path.relative_to(consumer / "a")
            assert twin.read_bytes() == path.read_bytes(), path


def test_a_mirror_serving_other_bytes_is_refused_naming_the_reference(
        files: tuple[Path, Path, Path], tmp_path: Path) -> None:
    wheel, web, zstd = files
    ws = _workspace(tmp_path / "ws")
    with _fill(RegistryMirror(tmp_path / "a"), wheel, web, zstd) as good:
        env = {**machine_config(tmp_path / "home-a", good),
               "PREBAKE_CACHE": str(tmp_path / "cache-a")}
        assert support.prebake("-C", ws, "pin", "zstd", ZSTD, env=env).returncode == 0
    # the same names, other bytes: Debian 12's zstd under 13's name, the wheel's bytes under
    # its name with an index that states their digest, another npm tarball
    older = support.debian_orig("libzstd", "1.5.4+dfsg2")
    bad = RegistryMirror(tmp_path / "c")
    bad.add_debian(f"pool/{POOL}", older)
    bad.add_wheel(zstd, name=wheel.name)
    bad.add_npm("onnxruntime-web", "1.30.0", older)
    with bad:
        env = {**machine_config(tmp_path / "home-c", bad),
               "PREBAKE_CACHE": str(tmp_path / "cache-c")}
        build = support.prebake("-C", ws, "build", "--json", env=env)
    assert build.returncode == 1, build.stdout + build.stderr
    (unit,) = json.loads(build.stdout)["units"]
    message = unit["message"]
    assert "\n" not in message and "Traceback" not in build.stderr
    # the first source the build needs: its reference, the lock's digest, what came
    assert message.startswith(f"{REFS[0]}: no mirror served the file prebake.sources.lock "
                              f"pins (sha256 {_sha(zstd)}, {zstd.stat().st_size} bytes); "
                              "tried: "), message
    assert f"{bad.debian}/pool/{POOL} sent sha256 {_sha(older)}" in message
    assert not list((tmp_path / "cache-c" / "sources").glob("[0-9a-f]*"))  # nothing kept
    assert not (ws / "releases").exists()


def test_a_reference_no_mirror_serves_names_the_mirrors_tried(
        files: tuple[Path, Path, Path], tmp_path: Path) -> None:
    """pin: one line per reference naming each mirror asked and what it said; the lock's
    pending entry names none of this machine's hosts."""
    _wheel, web, _zstd = files
    ws = _workspace(tmp_path / "ws")
    empty = RegistryMirror(tmp_path / "empty")
    empty.add_npm("onnxruntime-web", "1.29.0", web)  # only another version
    with empty:
        env = {**machine_config(tmp_path / "home", empty),
               "PREBAKE_CACHE": str(tmp_path / "cache")}
        pin = support.prebake("-C", ws, "pin", "zstd", ZSTD, env=env)
    assert pin.returncode == 1, pin.stdout + pin.stderr
    said = pin.stdout + pin.stderr
    assert (f"{REFS[0]}: not downloadable here: {empty.debian}/pool/{POOL}: HTTP 404 Not Found"
            in said), said
    assert (f"{REFS[1]}: not downloadable here: index {empty.pypi}/onnxruntime/ "
            f"(pip: {tmp_path / 'home' / '.config' / 'pip' / 'pip.conf'} [global]): "
            "HTTP 404 Not Found") in said, said
    assert (f"{REFS[2]}: not downloadable here: registry {empty.npm}onnxruntime-web (npm: "
            f"{tmp_path / 'home' / '.npmrc'} (registry)): no version 1.30.0 with a "
            "dist.tarball (latest: 1.29.0)") in said, said
    lock = (ws / "prebake.sources.lock").read_text()
    assert "127.0.0.1" not in lock and lock.count("[[pending]]") == 3


PASSWORD = "Mirr0r-pa55-Zq81"
NPM_TOKEN = "registry-T0ken-77xq-Wv3"


def _every_text(folder: Path) -> Iterator[tuple[str, bytes]]:
    """(where, bytes) of every file under ``folder``, each member of a ``.tar.xz`` too."""
    for path in sorted(folder.rglob("*")):
        if not path.is_file() or path.is_symlink():
            continue
        yield str(path), path.read_bytes()
        if path.name.endswith(".tar.xz"):
            with tarfile.open(path) as tf:
                for member in tf.getmembers():
                    fh = tf.extractfile(member)
                    if fh is not None:
                        yield f"{path}:{member.name}", fh.read()


def test_mirror_credentials_reach_their_mirror_and_nothing_shows_them(
        files: tuple[Path, Path, Path], tmp_path: Path) -> None:
    """A Debian root and a PyPI index behind Basic credentials (``PREBAKE_DEBIAN_MIRROR`` and
    ``PIP_INDEX_URL`` with ``ci:PASSWORD@``), an npm registry behind an ``.npmrc`` token:
    ``pin``, ``build --dry-run`` and ``build`` get every file (each server refuses a request
    without its credentials), each credential goes to its own server only, and neither
    shows in any output, the lock, the logs, the work folder or the asset and its sidecars."""
    wheel, web, zstd = files
    ws = _workspace(tmp_path / "ws")
    private = RegistryMirror(tmp_path / "private", auth=f"ci:{PASSWORD}")
    private.add_debian(f"pool/{POOL}", zstd)
    private.add_wheel(wheel)
    registry = RegistryMirror(tmp_path / "npm", token=NPM_TOKEN)
    registry.add_npm("onnxruntime-web", "1.30.0", web)
    with private, registry:
        host = registry.url.removeprefix("http://")
        with_password = private.url.replace("http://", f"http://ci:{PASSWORD}@")
        env = {**machine_config(tmp_path / "home", registry,
                                npmrc=f"//{host}/npm/:_authToken={NPM_TOKEN}\n"),
               "PREBAKE_DEBIAN_MIRROR": with_password + private.state.paths.debian,
               "PIP_INDEX_URL": with_password + private.state.paths.pypi,
               "PREBAKE_CACHE": str(tmp_path / "cache-pin")}
        runs = [support.prebake("-C", ws, "pin", "zstd", ZSTD, env=env)]
        assert runs[-1].returncode == 0, runs[-1].stdout + runs[-1].stderr
        env["PREBAKE_CACHE"] = str(tmp_path / "cache-build")  # empty: the build downloads
        runs.append(support.prebake("-C", ws, "build", "--dry-run", env=env))
        assert runs[-1].returncode == 0, runs[-1].stdout + runs[-1].stderr
        runs.append(support.prebake("-C", ws, "build", "--json", env=env))
        assert runs[-1].returncode == 0, runs[-1].stdout + runs[-1].stderr
    basic = "Basic " + base64.b64encode(f"ci:{PASSWORD}".encode()).decode()
    assert set(private.authorizations) == {basic}
    assert set(registry.authorizations) == {f"Bearer {NPM_TOKEN}"}
    assert len(registry.requests) == 4  # pin and build: the document, then the tarball
    (log,) = (ws / ".prebake" / "logs").glob("zstd*.log")
    # the URL used is named, its credentials masked
    assert f"downloaded http://***@{private.url[7:]}/debian/pool/{POOL} " in log.read_text()
    secrets = [PASSWORD, NPM_TOKEN, basic.split()[1],
               base64.b64encode(PASSWORD.encode()).decode().rstrip("=")]
    shown = [("output", (r.stdout + r.stderr).encode()) for r in runs]
    shown += [("prebake.sources.lock", (ws / "prebake.sources.lock").read_bytes())]
    shown += [*_every_text(ws / ".prebake"), *_every_text(ws / "releases")]
    assert any(where.endswith(".json") for where, _ in shown)  # the manifest sidecar
    leaks = [(where, secret) for where, data in shown for secret in secrets
             if secret.encode() in data]
    assert leaks == []


@pytest.fixture(scope="module")
def flagship_files() -> None:
    """The flagship lock's files, fetched through this machine's mirrors before the test's
    sockets are held to loopback (a fixture of a wider scope is set up first)."""
    locked_files(support.ROOT / "examples" / "flagship")


@pytest.mark.usefixtures("flagship_files")
def test_the_flagship_lock_is_made_again_on_a_machine_with_other_mirror_names(
        tmp_path: Path) -> None:
    """The example as committed: its lock removed, ``prebake pin onnxruntime 1.21.0``,
    ``prebake pin ffmpeg 7.1.5`` and ``prebake pin dav1d 1.5.4`` with an empty download
    cache, apt and pip pointed at a mirror on 127.0.0.1 with other paths
    (``tests.mirror_build``), write the committed lock again, byte for byte, every file
    downloaded from that mirror; the units plan the same input hashes as the committed
    workspace."""
    flagship = support.ROOT / "examples" / "flagship"
    ws = tmp_path / "ws"
    shutil.copytree(flagship, ws, ignore=shutil.ignore_patterns("releases", ".prebake",
                                                                "prebake_deps"))
    committed = (ws / "prebake.sources.lock").read_text()
    entries = tomllib.loads(committed)["source"]
    assert entries and all(e["url"].startswith(("debian:", "pypi:")) for e in entries)
    mirror = mirror_of_lock(ws, tmp_path / "mirror")
    (ws / "prebake.sources.lock").unlink()
    with mirror:
        env = {**machine_config(tmp_path / "home", mirror, suite="trixie"),
               "PREBAKE_CACHE": str(tmp_path / "cache")}
        for name, version in (("onnxruntime", "1.21.0"), ("ffmpeg", "7.1.5"),
                              ("dav1d", "1.5.4")):
            pin = support.prebake("-C", ws, "pin", name, version, env=env, timeout=900)
            assert pin.returncode == 0, pin.stdout + pin.stderr
        assert _hashes(ws, env) == _hashes(flagship, env)
    assert (ws / "prebake.sources.lock").read_text() == committed
    assert (ws / "prebake.toml").read_text() == (flagship / "prebake.toml").read_text()
    asked = [r for r in mirror.requests if not r.endswith("/")]  # files, not index pages
    assert len(asked) == len(entries), mirror.requests
    assert all(r.startswith(("/srv/debian-archive/pool/", "/pkgs/files/")) for r in asked)
