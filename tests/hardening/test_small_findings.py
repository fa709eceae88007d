"""The smaller findings on the fetch and config paths, each as a user meets it.

- an asset member whose name no file system takes (a 300-byte component) is the asset's fault,
  named with its member, never blamed on ``--into``;
- an xz stream whose header asks for a 4 GiB dictionary, decompressed under a memory limit, is
  one line naming the file (never ``internal error: MemoryError``);
- a config error that echoes a key holding a newline stays one line.
"""

from __future__ import annotations

import hashlib
import io
import json
import lzma
import subprocess
import sys
import tarfile
import zlib
from pathlib import Path

from prebake.package.naming import sha256_line
from tests import support

PLATFORM = "linux-x86_64"
FILENAME = f"demo-1.0.0-{PLATFORM}.tar.xz"


def _store(store: Path, members: dict[str, bytes], xz: bytes | None = None) -> None:
    """A release of ``demo`` in a ``file://`` store, its tar.xz holding ``members`` (or the
    given xz bytes), with a valid manifest and sidecars."""
    manifest = support.valid_manifest("demo", "1.0.0", PLATFORM)
    files = {"share/prebake/manifest.json": json.dumps(manifest).encode(), **members}
    if xz is None:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:xz") as tf:
            for name, data in files.items():
                ti = tarfile.TarInfo(name)
                ti.size = len(data)
                tf.addfile(ti, io.BytesIO(data))
        xz = buf.getvalue()
    d = store / "continuous"
    d.mkdir(parents=True, exist_ok=True)
    (d / FILENAME).write_bytes(xz)
    (d / (FILENAME + ".json")).write_text(json.dumps(manifest))
    (d / (FILENAME + ".sha256")).write_text(sha256_line(hashlib.sha256(xz).hexdigest(),
                                                        FILENAME))


def _fetch_argv(tmp_path: Path, into: Path) -> list[str]:
    return ["fetch", "demo==1.0.0", "--platform", PLATFORM, "--store",
            (tmp_path / "store").as_uri(), "--into", str(into), "--release", "continuous",
            "--lock", str(tmp_path / "prebake.lock")]


def _one_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


def test_an_over_long_member_name_is_the_assets_fault(tmp_path: Path) -> None:
    long_name = "include/" + "n" * 300 + ".h"
    _store(tmp_path / "store", {long_name: b"#pragma once\n"})
    into = tmp_path / "into"
    proc = support.prebake(*_fetch_argv(tmp_path, into),
                           env={"PREBAKE_CACHE": str(tmp_path / "cache")})
    line = _one_line(proc)
    assert FILENAME in line and "longer than 255 bytes" in line and "nnnn" in line, line
    assert f"{into}:" not in line and "--into" not in line, line
    assert not into.exists() and not (tmp_path / "prebake.lock").exists()


def _huge_dictionary(xz: bytes) -> bytes:
    """``xz`` with its first block's LZMA2 dictionary size set to 4 GiB - 1 (properties byte
    40, the largest the format encodes) and the block header's CRC32 made right again
    (xz file format 1.1.0, sections 3.1 and 5.3.1)."""
    data = bytearray(xz)
    start = 12  # after the stream header
    size = (data[start] + 1) * 4
    flags = data[start + 1]
    pos = start + 2
    for present in (flags & 0x40, flags & 0x80):  # compressed, uncompressed size varints
        if present:
            while data[pos] & 0x80:
                pos += 1
            pos += 1
    assert data[pos] == 0x21 and data[pos + 1] == 1, "one LZMA2 filter with one property byte"
    data[pos + 2] = 40
    crc = zlib.crc32(bytes(data[start:start + size - 4]))
    data[start + size - 4:start + size] = crc.to_bytes(4, "little")
    return bytes(data)


def test_a_4_gib_xz_dictionary_under_a_memory_limit_is_one_line(tmp_path: Path) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        manifest = json.dumps(support.valid_manifest("demo", "1.0.0", PLATFORM)).encode()
        ti = tarfile.TarInfo("share/prebake/manifest.json")
        ti.size = len(manifest)
        tf.addfile(ti, io.BytesIO(manifest))
    xz = _huge_dictionary(lzma.compress(buf.getvalue(), format=lzma.FORMAT_XZ))
    _store(tmp_path / "store", {}, xz=xz)
    into = tmp_path / "into"
    # the CLI as a user runs it, in a process that may map 2 GiB at most (ulimit -v)
    limited = ("import resource, sys\n"
               "resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))\n"
               "from prebake.cli import main\n"
               "raise SystemExit(main(sys.argv[1:]))\n")
    proc = subprocess.run([sys.executable, "-c", limited, *_fetch_argv(tmp_path, into)],
                          env=support.tool_env({"PREBAKE_CACHE": str(tmp_path / "cache")}),
                          capture_output=True, text=True, timeout=300)
    line = _one_line(proc)
    assert FILENAME in line or str(tmp_path / "cache") in line, line
    assert "memory" in line, line
    assert not into.exists() and not (tmp_path / "prebake.lock").exists()


def test_a_config_error_echoing_a_newline_stays_one_line(tmp_path: Path) -> None:
    (tmp_path / "prebake.toml").write_text(
        '[project]\nname = "x"\nversion = "1.0"\n"bad\\nkey" = 1\n'
        '"esc\\u001b[31m" = 2\n')
    proc = support.prebake("-C", tmp_path, "plan")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 3, proc.stderr  # the count, then one line per problem
    assert "\x1b" not in proc.stderr
    assert any('project."bad\\nkey"' in line and ":4:" in line for line in lines), lines
