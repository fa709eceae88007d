"""``prebake verify-rebuild``: a published asset rebuilt in a fresh folder, compared byte for byte.

One small from-source unit (Debian's gcc, a C library of two objects) is built and published
once; each test copies that workspace with its release and checks a variant of the asset:

* the asset as published: the same bytes (exit 0), the rebuild at another path;
* one byte changed inside an object of the static library (the archive repacked as prebake
  packs it): exit 1, the library and its member named, at the byte that changed;
* one byte changed in the ``.tar.xz`` itself: exit 1, where the given asset stops
  decompressing named;
* an unreadable manifest (a truncated sidecar; an asset without one that is not an xz file)
  and an unreadable source lock: exit 2, one line naming the file, nothing written;
* a workspace whose recipe changed since: exit 2, the input that differs named.
"""

from __future__ import annotations

import hashlib
import io
import json
import lzma
import os
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from prebake.inspect.archive import read_archive
from tests import support

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")

ASSET = "duo-1.0.0-linux-x86_64.tar.xz"
SCHEMA = json.loads((support.ROOT / "schemas" / "verify-rebuild.schema.json").read_text())
RECIPE = '''\
"""duo: two objects in one static library, from a local source folder."""

from prebake.recipes import Build, LocalSource, Outputs, Recipe, Snippet

RECIPE = Recipe(
    name="duo",
    pin="duo",
    sources=(LocalSource("../src/duo"),),
    platforms={"linux-x86_64": Build(commands=(
        "cmake -E make_directory {build}/obj {prefix}/lib {prefix}/include",
        "{cc} -O2 -fPIC -c {src}/one.c -o {build}/obj/one.o",
        "{cc} -O2 -fPIC -c {src}/two.c -o {build}/obj/two.o",
        "ar rcsD {prefix}/lib/libduo.a {build}/obj/one.o {build}/obj/two.o",
        "cmake -E copy {src}/duo.h {prefix}/include/duo.h",
    ))},
    outputs=Outputs(libs={"*": ("lib/libduo.a",)}, headers=("include/duo.h",),
                    license="LICENSE"),
    kind={"*": "static"},
    link_test=Snippet(code=("#include <duo.h>\\n"
                            "int main() { return duo_one() + duo_two() != 3; }\\n"),
                      lang="c", symbols=("duo_one", "duo_two")),
)
'''
FILES = {
    "prebake.toml": support.gcc_workspace("duo", 'duo = "1.0.0"', "libs", '["duo"]'),
    "recipes/duo.py": RECIPE,
    "src/duo/one.c": '#include "duo.h"\nint duo_one(void) { return 1; }\n',
    "src/duo/two.c": '#include "duo.h"\nint duo_two(void) { return 2; }\n',
    "src/duo/duo.h": "int duo_one(void);\nint duo_two(void);\n",
    "src/duo/LICENSE": "duo: test data, no rights\n",
}


@pytest.fixture(scope="module")
def published() -> Path:
    """The workspace, built and published once (cached by content)."""
    ws, rc, data = support.cached_prebake_build("verify-duo", FILES,
                                                ["build", "--platform", "linux-x86_64"])
    assert rc == 0, json.dumps(data, indent=2)[-3000:]
    return ws


@pytest.fixture
def ws(published: Path, tmp_path: Path) -> Path:
    """A private copy of the published workspace (the tests change its files)."""
    dest = tmp_path / "checkout" / "ws"
    shutil.copytree(published, dest, ignore=shutil.ignore_patterns(".prebake"))
    return dest


def _asset(ws: Path) -> Path:
    return next((ws / "releases").rglob(ASSET))


def _verify(ws: Path, asset: Path, *args: str, env: dict[str, str] | None = None
            ) -> tuple[int, dict[str, Any], str]:
    proc = support.prebake("-C", ws, "verify-rebuild", asset, *args, "--json", env=env)
    data = json.loads(proc.stdout) if proc.stdout.strip() else {}
    if data:
        jsonschema.validate(data, SCHEMA)
    return proc.returncode, data, proc.stderr


def _files(ws: Path) -> dict[str, str]:
    """Every file outside the rebuild's own folder, by digest (to show nothing else changed)."""
    return {str(p.relative_to(ws)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(ws.rglob("*")) if p.is_file() and ".prebake" not in p.parts}


def _repack(asset: Path, dest: Path, change: Any) -> None:
    """``asset`` with one file's bytes changed by ``change``, packed again as prebake packs
    (the same member order and headers; xz)."""
    out = io.BytesIO()
    with tarfile.open(asset, "r:xz") as src, tarfile.open(fileobj=out, mode="w",
                                                          format=tarfile.GNU_FORMAT) as tf:
        for m in src.getmembers():
            data = src.extractfile(m).read() if m.isfile() else None  # type: ignore[union-attr]
            if data is not None:
                data = change(m.name, data)
                m.size = len(data)
            tf.addfile(m, io.BytesIO(data) if data is not None else None)
    dest.write_bytes(lzma.compress(out.getvalue(), preset=6))


def test_the_published_asset_rebuilds_to_the_same_bytes(ws: Path) -> None:
    asset = _asset(ws)
    before = _files(ws)
    rc, data, err = _verify(ws, asset)
    assert rc == 0, err
    assert data["same"] and data["first_difference"] is None
    digest = hashlib.sha256(asset.read_bytes()).hexdigest()
    assert data["rebuilt"]["sha256"] == data["sha256"] == digest
    assert data["manifest"].endswith(ASSET + ".json") and data["unit"] == "duo/linux-x86_64"
    assert Path(data["rebuilt"]["path"]).is_relative_to(ws / ".prebake" / "rebuild")
    assert _files(ws) == before


def test_one_byte_changed_in_an_object_is_named(ws: Path, tmp_path: Path) -> None:
    asset = _asset(ws)
    with tarfile.open(asset, "r:xz") as tf:
        lib = tf.extractfile("lib/libduo.a").read()  # type: ignore[union-attr]
    two = next(m for m in read_archive(lib).members if m.name == "two.o")
    at = two.data_off + 100

    def change(name: str, data: bytes) -> bytes:
        if name != "lib/libduo.a":
            return data
        return data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1:]

    changed = asset.parent / "elsewhere" / ASSET
    changed.parent.mkdir()
    shutil.copy(asset.with_name(ASSET + ".json"), changed.with_name(ASSET + ".json"))
    _repack(asset, changed, change)
    rc, data, err = _verify(ws, changed)
    assert rc == 1, err
    first = data["first_difference"]
    assert (first["member"], first["inner"], first["offset"]) == ("lib/libduo.a", "two.o", 100)
    assert data["differing"] == ["lib/libduo.a", "lib/libduo.a(two.o)"]
    human = support.prebake("-C", ws, "verify-rebuild", changed)
    assert human.returncode == 1
    assert "differs: first at lib/libduo.a(two.o): byte 100 of" in human.stdout


def test_one_byte_changed_in_the_compressed_file_is_found(ws: Path) -> None:
    asset = _asset(ws)
    raw = bytearray(asset.read_bytes())
    raw[len(raw) // 2] ^= 0x01
    changed = asset.parent / "flipped" / ASSET
    changed.parent.mkdir()
    changed.write_bytes(bytes(raw))
    shutil.copy(asset.with_name(ASSET + ".json"), changed.with_name(ASSET + ".json"))
    rc, data, err = _verify(ws, changed)
    assert rc == 1, err
    assert not data["same"] and data["sha256"] != data["rebuilt"]["sha256"]
    first = data["first_difference"]
    assert first["detail"].startswith(("the given asset stops decompressing here", "byte "))
    assert first["member"] is not None


def test_an_unreadable_manifest_is_named_and_exits_2(ws: Path) -> None:
    asset = _asset(ws)
    sidecar = asset.with_name(ASSET + ".json")
    sidecar.write_text(sidecar.read_text()[:100])
    before = _files(ws)
    proc = support.prebake("-C", ws, "verify-rebuild", asset)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and str(sidecar) in proc.stderr
    assert "invalid manifest" in proc.stderr and "Traceback" not in proc.stderr
    assert _files(ws) == before and not (ws / ".prebake" / "rebuild").exists()
    # no sidecar and an asset that is not xz: the manifest inside it cannot be read
    bare = ws / "bare" / ASSET
    bare.parent.mkdir()
    bare.write_bytes(b"not an xz file")
    proc = support.prebake("-C", ws, "verify-rebuild", bare)
    assert proc.returncode == 2 and str(bare) in proc.stderr
    assert "cannot read its manifest" in proc.stderr and "Traceback" not in proc.stderr


def test_an_unreadable_lock_is_named_and_exits_2(ws: Path) -> None:
    lock = ws / "prebake.sources.lock"
    lock.write_text("version = [\n")
    proc = support.prebake("-C", ws, "verify-rebuild", _asset(ws))
    assert proc.returncode == 2
    assert str(lock) in proc.stderr and "not a source lock" in proc.stderr
    assert "Traceback" not in proc.stderr and not (ws / ".prebake" / "rebuild").exists()


def test_a_workspace_changed_since_names_the_input(ws: Path) -> None:
    recipe = ws / "recipes" / "duo.py"
    recipe.write_text(recipe.read_text().replace("-O2 -fPIC -c {src}/one.c",
                                                 "-O1 -fPIC -c {src}/one.c"))
    proc = support.prebake("-C", ws, "verify-rebuild", _asset(ws))
    assert proc.returncode == 2
    assert "does not hold what it was built from" in proc.stderr
    assert "recipe-file (asset: " in proc.stderr and "Traceback" not in proc.stderr


def test_into_must_be_an_empty_folder(ws: Path, tmp_path: Path) -> None:
    full = tmp_path / "full"
    full.mkdir()
    (full / "keep.txt").write_text("mine\n")
    proc = support.prebake("-C", ws, "verify-rebuild", _asset(ws), "--into", full)
    assert proc.returncode == 2 and "empty or new folder" in proc.stderr
    assert (full / "keep.txt").read_text() == "mine\n"


# ---- independence: nothing shared with the build it checks ----------------------------------

def _tampered(asset: Path, dest: Path) -> Path:
    """``asset`` with one byte of ``two.o`` changed, repacked at ``dest`` with its sidecar."""
    with tarfile.open(asset, "r:xz") as tf:
        lib = tf.extractfile("lib/libduo.a").read()  # type: ignore[union-attr]
    at = next(m for m in read_archive(lib).members if m.name == "two.o").data_off + 100

    def change(name: str, data: bytes) -> bytes:
        if name != "lib/libduo.a":
            return data
        return data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1:]

    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(asset.with_name(ASSET + ".json"), dest.with_name(ASSET + ".json"))
    _repack(asset, dest, change)
    return dest


def test_an_asset_inside_the_rebuild_folder_is_refused_and_kept(ws: Path) -> None:
    """A tampered asset where the rebuild writes its own: the check must not delete it,
    rebuild it at the same path and say ``same bytes``."""
    inside = (ws / ".prebake" / "rebuild" / "workspace" / ".prebake" / "dist" / "linux-x86_64"
              / ASSET)
    _tampered(_asset(ws), inside)
    data = inside.read_bytes()
    proc = support.prebake("-C", ws, "verify-rebuild", inside)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and "Traceback" not in proc.stderr
    assert str(inside) in proc.stderr and "rebuild" in proc.stderr
    assert inside.read_bytes() == data, "the given asset is only read"
    # so is a manifest given from there
    outside = ws / "given" / ASSET
    outside.parent.mkdir()
    shutil.copy(inside, outside)
    proc = support.prebake("-C", ws, "verify-rebuild", outside, "--manifest",
                           inside.with_name(ASSET + ".json"))
    assert proc.returncode == 2 and "rebuild" in proc.stderr, proc.stderr
    assert proc.stderr.strip().count("\n") == 0


@pytest.mark.parametrize("into", ["sub/rb", ".", "recipes"])
def test_into_inside_the_workspace_is_refused_in_one_line(ws: Path, into: str) -> None:
    before = _files(ws)
    target = ws / into
    proc = support.prebake("-C", ws, "verify-rebuild", _asset(ws), "--into", target,
                           timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and "Traceback" not in proc.stderr
    assert "--into" in proc.stderr and "inside the workspace" in proc.stderr
    assert _files(ws) == before and not (ws / "sub").exists()
    assert not (ws / ".prebake" / "rebuild").exists()


def test_the_rebuild_shares_no_cache_and_says_so(ws: Path, tmp_path: Path) -> None:
    """The caller's launcher and cache variables never reach the rebuild; zig's caches are
    its own, empty; the report lists it all."""
    env = {"PREBAKE_COMPILER_LAUNCHER": "ccache", "CCACHE_DIR": str(tmp_path / "ccache"),
           "CCACHE_BASEDIR": str(ws), "SCCACHE_DIR": str(tmp_path / "sccache"),
           "ZIG_GLOBAL_CACHE_DIR": str(tmp_path / "zig-global"),
           "ZIG_LOCAL_CACHE_DIR": str(tmp_path / "zig-local")}
    proc = support.prebake("-C", ws, "verify-rebuild", _asset(ws), "--json", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(proc.stdout)
    jsonschema.validate(data, SCHEMA)
    iso = data["isolation"]
    assert iso["launcher"] is None
    assert {"PREBAKE_COMPILER_LAUNCHER", "CCACHE_DIR", "CCACHE_BASEDIR", "SCCACHE_DIR",
            "ZIG_GLOBAL_CACHE_DIR", "ZIG_LOCAL_CACHE_DIR"} <= set(iso["dropped"])
    folder = Path(data["folder"])
    caches = {c["name"]: c for c in iso["caches"]}
    for name in ("ZIG_GLOBAL_CACHE_DIR", "ZIG_LOCAL_CACHE_DIR"):
        assert Path(caches[name]["path"]).is_relative_to(folder), caches
    log = Path(data["log"]).read_text()
    block = log.split("# environment (allowlist + platform + recipe):", 1)[1]
    assert "CCACHE_DIR" not in block and "ccache" not in log
    assert f"ZIG_GLOBAL_CACHE_DIR={caches['ZIG_GLOBAL_CACHE_DIR']['path']}" in block
    assert not (tmp_path / "ccache").exists()
    human = support.prebake("-C", ws, "verify-rebuild", _asset(ws), env=env)
    assert human.returncode == 0, human.stderr
    assert "no compiler launcher" in human.stdout and "CCACHE_DIR" in human.stdout


POISON_PREFIX = """\
#!/bin/sh
# ccache's prefix_command: run in front of the real compile, not part of ccache's key
exec "$@" -O0
"""


def _ccache_stats(env: dict[str, str]) -> dict[str, int]:
    out = subprocess.run(["ccache", "--print-stats"], env={**os.environ, **env},
                         capture_output=True, text=True, check=True).stdout
    return {k: int(v) for k, v in (ln.split("\t") for ln in out.splitlines())}


@pytest.mark.skipif(shutil.which("ccache") is None, reason="needs ccache")
def test_a_compiler_cache_entry_remade_under_a_prefix_does_not_serve_the_check(
        ws: Path, tmp_path: Path) -> None:
    """The issue's attack with real ccache: the caller's cache (what CI restores) is filled by
    a build whose ccache.conf names a prefix command (``CCACHE_PREFIX``, not in ccache's key)
    and ``recache``; the asset built through it holds the prefix's objects. The check, given
    the same environment, must rebuild without that cache and say the bytes differ."""
    ccache = tmp_path / "ccache"
    ccache.mkdir()
    prefix = tmp_path / "poison.sh"
    prefix.write_text(POISON_PREFIX)
    prefix.chmod(0o755)
    (ccache / "ccache.conf").write_text(f"prefix_command = {prefix}\nrecache = true\n")
    # CCACHE_BASEDIR: paths under the workspace hashed relative to the folder compiled in, so
    # that a build in another folder (the rebuild's) finds the same entries
    env = {"PREBAKE_COMPILER_LAUNCHER": "ccache", "CCACHE_DIR": str(ccache),
           "CCACHE_BASEDIR": str(ws)}
    shutil.rmtree(ws / "releases")
    built = support.prebake("-C", ws, "build", "--platform", "linux-x86_64", env=env)
    assert built.returncode == 0, built.stdout + built.stderr
    (ccache / "ccache.conf").write_text("")  # the attacker's lines gone; the entries stay
    assert _ccache_stats(env)["recache"] == 2  # both objects made again, through the prefix
    # the cache now serves the prefix's objects to a build through it
    again = support.prebake("-C", ws, "build", "--platform", "linux-x86_64", "--force",
                            env=env)
    assert again.returncode == 0, again.stdout + again.stderr
    assert _ccache_stats(env)["direct_cache_hit"] == 2
    with tarfile.open(_asset(ws), "r:xz") as tf:
        lib = tf.extractfile("lib/libduo.a").read()  # type: ignore[union-attr]
    one = next(m for m in read_archive(lib).members if m.name == "one.o")
    assert b"\x55\x48\x89\xe5" in lib[one.data_off:one.data_off + one.size]  # -O0's frame
    rc, data, err = _verify(ws, _asset(ws), env=env)
    assert rc == 1, err
    assert data["isolation"]["launcher"] is None
    assert data["first_difference"]["member"] == "lib/libduo.a"
    assert set(data["differing"]) >= {"lib/libduo.a", "lib/libduo.a(one.o)",
                                      "lib/libduo.a(two.o)"}
