"""Faults outside the asset are named as what they are: a full or read-only destination, a
cache entry that vanished. One line naming the right path, exit 2, nothing installed.

The full and read-only destinations are real file systems (a small tmpfs mounted for the test,
unmounted after; mounting needs root, which the test machines are), the asset a real release
asset in a ``file://`` store, fetched by the CLI as a user runs it.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from prebake.package.naming import sha256_line
from tests import support

PLATFORM = "linux-x86_64"
FILENAME = f"demo-1.0.0-{PLATFORM}.tar.xz"
PAYLOAD = 2 * 1024 * 1024  # bytes unpacked: more than the small file system holds

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")


@contextlib.contextmanager
def tmpfs(where: Path, size: str, *, read_only: bool = False) -> Iterator[Path]:
    where.mkdir(parents=True, exist_ok=True)
    opts = f"size={size}" + (",ro" if read_only else "")
    subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)


def _store(store: Path) -> None:
    """A release asset of ``PAYLOAD`` bytes (random, so xz keeps it near its size in the
    cache but the point is the unpacked size) with a valid manifest."""
    manifest = support.valid_manifest("demo", "1.0.0", PLATFORM)
    files = {"share/prebake/manifest.json": json.dumps(manifest).encode(),
             "share/demo/blob.bin": hashlib.shake_256(b"demo").digest(PAYLOAD)}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz") as tf:
        for name, data in files.items():
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
    d = store / "continuous"
    d.mkdir(parents=True, exist_ok=True)
    data = buf.getvalue()
    (d / FILENAME).write_bytes(data)
    (d / (FILENAME + ".json")).write_text(json.dumps(manifest))
    (d / (FILENAME + ".sha256")).write_text(sha256_line(hashlib.sha256(data).hexdigest(),
                                                        FILENAME))


def _fetch(tmp_path: Path, into: Path) -> subprocess.CompletedProcess[str]:
    return support.prebake(
        "fetch", "demo==1.0.0", "--platform", PLATFORM, "--store",
        (tmp_path / "store").as_uri(), "--into", into, "--release", "continuous",
        "--lock", tmp_path / "prebake.lock", env={"PREBAKE_CACHE": str(tmp_path / "cache")})


def _one_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


@needs_root
def test_a_full_destination_is_named_not_the_asset(tmp_path: Path) -> None:
    _store(tmp_path / "store")
    with tmpfs(tmp_path / "small", "256k") as small:
        into = small / "deps"
        line = _one_line(_fetch(tmp_path, into))
        assert line.startswith(f"prebake: error: {into}: no space left on device"), line
        assert "not a readable archive" not in line and str(tmp_path / "cache") not in line
        assert list(small.iterdir()) == []  # the temporary tree went too
    assert not (tmp_path / "prebake.lock").exists()
    # the cached asset was fine all along: the same fetch into a roomy folder works
    proc = _fetch(tmp_path, tmp_path / "roomy")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "roomy" / "share" / "demo" / "blob.bin").stat().st_size == PAYLOAD


@needs_root
def test_a_read_only_destination_is_named(tmp_path: Path) -> None:
    _store(tmp_path / "store")
    with tmpfs(tmp_path / "ro", "1m", read_only=True) as ro:
        into = ro / "deps"
        line = _one_line(_fetch(tmp_path, into))
        assert line.startswith(f"prebake: error: {into}: read-only file system"), line
        assert str(tmp_path / "cache") not in line
    assert not (tmp_path / "prebake.lock").exists()


@needs_root
def test_a_full_cache_is_named(tmp_path: Path) -> None:
    """The download cache on a full file system: the cache's path, not the store's asset."""
    _store(tmp_path / "store")
    with tmpfs(tmp_path / "cache", "64k"):
        line = _one_line(_fetch(tmp_path, tmp_path / "deps"))
        assert str(tmp_path / "cache") in line and "no space left on device" in line.lower()
    assert not (tmp_path / "deps").exists()


def test_a_cache_entry_that_vanishes_before_unpacking_is_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Verified, then removed (a cache cleaner, another fetch's cleanup) before it is opened:
    the message names the cache entry and says what happened; nothing is installed."""
    from prebake.consume import fetch as fetch_mod
    from prebake.errors import PrebakeError

    _store(tmp_path / "store")
    real = fetch_mod.safe_extract

    def vanish_first(archive: Path, *args: object, **kwargs: object) -> list[str]:
        archive.unlink()  # the window between the cache's verification and the unpack
        return real(archive, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(fetch_mod, "safe_extract", vanish_first)
    with pytest.raises(PrebakeError) as info:
        fetch_mod.fetch(fetch_mod.FetchRequest(
            "demo", "1.0.0", PLATFORM, store=(tmp_path / "store").as_uri(),
            into=tmp_path / "deps", release="continuous", cache_dir=tmp_path / "cache"))
    text = str(info.value)
    cached = tmp_path / "cache" / "assets"
    assert text.startswith(str(cached)) and "vanished" in text and "\n" not in text, text
    assert not (tmp_path / "deps").exists()


def test_a_cache_entry_that_vanishes_before_it_is_verified_is_downloaded_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from prebake.consume import fetch as fetch_mod

    _store(tmp_path / "store")
    store = (tmp_path / "store").as_uri()
    first = fetch_mod.fetch(fetch_mod.FetchRequest(
        "demo", "1.0.0", PLATFORM, store=store, into=tmp_path / "a", release="continuous",
        cache_dir=tmp_path / "cache"))
    assert first.downloaded
    real = fetch_mod.file_sha256
    gone: list[Path] = []

    def vanish_once(path: Path, *args: object, **kwargs: object) -> str:
        if "assets" in path.parts and not gone:
            gone.append(path)
            path.unlink()
        return real(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(fetch_mod, "file_sha256", vanish_once)
    again = fetch_mod.fetch(fetch_mod.FetchRequest(
        "demo", "1.0.0", PLATFORM, store=store, into=tmp_path / "b", release="continuous",
        cache_dir=tmp_path / "cache"))
    assert gone and again.downloaded
    assert (tmp_path / "b" / "share" / "demo" / "blob.bin").stat().st_size == PAYLOAD
