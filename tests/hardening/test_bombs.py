"""Decompression bombs stop before they cost disk; an asset without a prebake manifest is
refused.

The bombs are real archives made here without ever holding 2 GiB anywhere: a tar stream whose
header declares 2 GiB (or 2 048 members of 1 MiB), compressed as concatenated gzip members or
xz streams of the same all-zero chunk (both formats allow concatenation, and both readers
follow it). 0.3 MB of xz and 2 MB of gzip expand to 2 GiB.
"""

from __future__ import annotations

import gzip
import json
import lzma
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from prebake.extract import RATIO_FLOOR, UnsafeArchive, safe_extract
from prebake.package.naming import sha256_line
from tests import support

GiB = 1024**3
PLATFORM = "linux-x86_64"


def _header(name: str, size: int) -> bytes:
    ti = tarfile.TarInfo(name)
    ti.size = size
    ti.mtime = 315532800
    return ti.tobuf(format=tarfile.GNU_FORMAT)


def _xz(data: bytes) -> bytes:
    # the big zero chunk once at the strongest preset; small header blocks cheaply
    preset = 9 | lzma.PRESET_EXTREME if len(data) > 1 << 16 else 0
    return lzma.compress(data, preset=preset)


def _gz(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=9, mtime=0)


def _bomb(path: Path, compress: Callable[[bytes], bytes], *, members: int, chunk: int) -> Path:
    """``members`` files of ``chunk`` zero bytes each (one member: a single 2 GiB file made of
    ``GiB*2 // chunk`` compressed chunks)."""
    zero = compress(bytes(chunk))
    with open(path, "wb") as out:
        if members == 1:
            out.write(compress(_header("zeros.bin", 2 * GiB)))
            for _ in range(2 * GiB // chunk):
                out.write(zero)
        else:
            for i in range(members):
                out.write(compress(_header(f"z/{i:05}.bin", chunk)))
                out.write(zero)
        out.write(compress(bytes(1024)))  # end-of-archive blocks
    return path


BOMBS = {
    "tar.xz, one 2 GiB member": (".tar.xz", _xz, 1, 8 * 1024**2, 400_000),
    "tar.gz, one 2 GiB member": (".tar.gz", _gz, 1, 1024**2, 2_500_000),
    "tar.xz, 2048 members of 1 MiB": (".tar.xz", _xz, 2048, 1024**2, 1_000_000),
}


@pytest.mark.parametrize("case", list(BOMBS))
def test_bomb_is_refused_by_the_ratio_budget(tmp_path: Path, case: str) -> None:
    suffix, compress, members, chunk, max_size = BOMBS[case]
    archive = _bomb(tmp_path / f"bomb{suffix}", compress, members=members, chunk=chunk)
    size = archive.stat().st_size
    assert size < max_size, size  # 0.3 MB / 2 MB for 2 GiB: a real bomb
    t0 = time.monotonic()
    with pytest.raises(UnsafeArchive, match="decompression bomb") as info:
        safe_extract(archive, tmp_path / "out")  # the default budget (4 GiB) alone would not
    assert time.monotonic() - t0 < 60
    budget = RATIO_FLOOR + 100 * size
    if members == 1:
        assert info.value.member == "zeros.bin"  # refused at its header: nothing written
    else:  # refused at the first member past the budget, long before 2 GiB
        written = int(info.value.member.split("/")[1].split(".")[0]) * chunk
        assert written <= budget
    assert sorted(p.name for p in tmp_path.iterdir()) == [archive.name]


def test_declared_sizes_stop_a_member_larger_than_the_manifest_says(tmp_path: Path) -> None:
    archive = _bomb(tmp_path / "a.tar.xz", _xz, members=4, chunk=1024**2)
    with pytest.raises(UnsafeArchive, match="manifest says 10"):
        safe_extract(archive, tmp_path / "out", declared={f"z/{i:05}.bin": 10 for i in range(4)})
    assert not (tmp_path / "out").exists()
    ok = safe_extract(archive, tmp_path / "out",
                      declared={f"z/{i:05}.bin": 1024**2 for i in range(4)})
    assert len(ok) == 4


def test_ordinary_archives_pass_the_ratio(tmp_path: Path) -> None:
    """Real, compressible content (text, repeated symbols) is far under 100x."""
    src = tmp_path / "src"
    (src / "include").mkdir(parents=True)
    for i in range(50):
        (src / "include" / f"h{i}.hpp").write_text(f"// header {i}\n" + "int f(int);\n" * 2000)
    archive = tmp_path / "t.tar.xz"
    with tarfile.open(archive, "w:xz") as tf:
        tf.add(src, arcname=".")
    assert len(safe_extract(archive, tmp_path / "out")) > 50


def _store_asset(store: Path, filename: str, data: bytes, manifest: dict[str, object]) -> None:
    import hashlib

    d = store / "continuous"
    d.mkdir(parents=True, exist_ok=True)
    (d / filename).write_bytes(data)
    (d / (filename + ".json")).write_text(json.dumps(manifest))
    (d / (filename + ".sha256")).write_text(sha256_line(hashlib.sha256(data).hexdigest(),
                                                        filename))


def _fetch(tmp_path: Path, store: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "prebake", "fetch", "demo==1.0.0", "--platform", PLATFORM,
         "--store", store.as_uri(), "--into", str(tmp_path / "into"), "--release",
         "continuous", "--lock", str(tmp_path / "prebake.lock")],
        cwd=tmp_path, env=support.tool_env({"PREBAKE_CACHE": str(tmp_path / "cache")}),
        capture_output=True, text=True, timeout=300)


def _manifest(files: list[tuple[str, int]]) -> dict[str, object]:
    # a complete sidecar: an invalid one is not trusted for its sizes (only the ratio holds)
    return support.valid_manifest("demo", "1.0.0", PLATFORM, files=[
        {"path": p, "size": n, "sha256": "0" * 64} for p, n in files])


@pytest.mark.parametrize("honest", [True, False], ids=["manifest-honest", "manifest-small"])
def test_fetch_of_a_bomb_asset_installs_nothing(tmp_path: Path, honest: bool) -> None:
    filename = f"demo-1.0.0-{PLATFORM}.tar.xz"
    bomb = _bomb(tmp_path / "bomb.tar.xz", _xz, members=1, chunk=8 * 1024**2)
    _store_asset(tmp_path / "store", filename, bomb.read_bytes(),
                 _manifest([("zeros.bin", 2 * GiB if honest else 1000)]))
    proc = _fetch(tmp_path, tmp_path / "store")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "zeros.bin" in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    assert ("decompression bomb" if honest else "manifest says 1000") in proc.stderr
    # named as the store has it, not by its path in the download cache
    assert (tmp_path / "store").as_uri() in proc.stderr
    assert str(tmp_path / "cache") not in proc.stderr
    assert not (tmp_path / "into").exists() and not (tmp_path / "prebake.lock").exists()
    assert not list(tmp_path.glob(".into.*"))


def test_asset_without_a_prebake_manifest_is_refused(tmp_path: Path) -> None:
    """Today such an asset skips the "manifest names another asset" check and is installed."""
    import io

    filename = f"demo-1.0.0-{PLATFORM}.tar.xz"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz") as tf:
        data = b"!<arch>\n"
        ti = tarfile.TarInfo("lib/libdemo.a")
        ti.size = len(data)
        tf.addfile(ti, io.BytesIO(data))
    _store_asset(tmp_path / "store", filename, buf.getvalue(),
                 _manifest([("lib/libdemo.a", 8)]))
    proc = _fetch(tmp_path, tmp_path / "store")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "has no share/prebake/manifest.json" in proc.stderr, proc.stderr
    assert not (tmp_path / "into").exists() and not (tmp_path / "prebake.lock").exists()
