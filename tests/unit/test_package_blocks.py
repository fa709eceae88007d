"""Parallel xz blocks: sized from the input only, the same bytes on 1 core or all of them, and
readable by ``tar -xJf``, Python's tarfile and prebake's own extraction."""

from __future__ import annotations

import hashlib
import io
import lzma
import os
import random
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from prebake.extract import safe_extract
from prebake.package import archive
from prebake.package.archive import (
    BLOCK_SIZE,
    TARGET_BLOCK,
    TWO_BLOCKS_FROM,
    block_size_for,
    collect_tree,
    tar_size,
    write_tar_xz,
)

MIB = 1 << 20


def _tree(root: Path) -> Path:
    """~6 MiB of half-compressible files, a long name and a symlink."""
    rng = random.Random(17)
    (root / "lib").mkdir(parents=True)
    for i in range(6):
        words = [rng.randbytes(8) for _ in range(400)]
        (root / "lib" / f"lib{i}.a").write_bytes(b"".join(rng.choice(words)
                                                         for _ in range(MIB // 8)))
    deep = root / "share" / ("d" * 110)
    deep.mkdir(parents=True)
    (deep / "notes.txt").write_text("long names take a GNU longlink record\n")
    (root / "lib" / "libx.so").symlink_to("lib0.a")
    return root


def test_block_size_is_a_function_of_the_stream_length() -> None:
    assert block_size_for(10 * MIB) == 10 * MIB  # small assets: one block
    assert block_size_for(TWO_BLOCKS_FROM - 512) == TWO_BLOCKS_FROM - 512
    # FFmpeg's 24 MiB of shared libraries: two blocks, not one on one core
    assert block_size_for(24 * MIB) == 12 * MIB
    assert block_size_for(TWO_BLOCKS_FROM) == TWO_BLOCKS_FROM // 2
    two = block_size_for(100 * MIB)
    assert two == 50 * MIB  # 100 MiB: two blocks, two cores at once
    assert block_size_for(1000 * MIB) <= BLOCK_SIZE
    assert -(-(1000 * MIB) // block_size_for(1000 * MIB)) == -(-(1000 * MIB) // TARGET_BLOCK)
    # the flagship's 66 MiB wasm prefix: two blocks (rounding made it one, on one core)
    assert block_size_for(66 * MIB) == 33 * MIB
    assert block_size_for(3 * TARGET_BLOCK) == TARGET_BLOCK
    assert block_size_for(3 * TARGET_BLOCK + 1) < TARGET_BLOCK


def test_the_stream_is_what_tarfile_writes_and_tar_size_its_length(tmp_path: Path) -> None:
    """The tar stream is written by hand (to cut blocks at a big file's first byte): byte for
    byte tarfile's GNU stream, with the big files cut out (1 MiB here) or not."""
    entries = collect_tree(_tree(tmp_path / "t"))
    buf = io.BytesIO()
    with tarfile.TarFile(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tf:
        for e in entries:
            ti = archive._tarinfo(e)
            if e.kind == "file":
                with e.open() as fh:
                    tf.addfile(ti, fh)
            else:
                tf.addfile(ti)
    assert len(buf.getvalue()) == tar_size(entries)
    for big in (1 << 20, 1 << 40):
        out = io.BytesIO()
        write_tar_xz(entries, out, threads=2, big_file=big)
        assert lzma.decompress(out.getvalue()) == buf.getvalue()
        assert out.getvalue().count(b"\xfd7zXZ\0") == (13 if big == 1 << 20 else 1)


def _in_child(tree: Path, out: Path, cores: int) -> str:
    """write_tar_xz in a fresh process pinned to ``cores`` cores (default threads, 1 MiB blocks)."""
    code = ("import os, sys\n"
            f"os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:{cores}])\n"
            "from pathlib import Path\n"
            "from prebake.package.archive import collect_tree, write_tar_xz\n"
            f"entries = collect_tree(Path({str(tree)!r}))\n"
            f"with open({str(out)!r}, 'wb') as fh:\n"
            "    print(write_tar_xz(entries, fh, target_block=1 << 20)[0])\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return proc.stdout.strip()


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs CPU affinity (Linux)")
def test_one_core_and_every_core_write_the_same_bytes(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "t")
    one, every = tmp_path / "one.tar.xz", tmp_path / "every.tar.xz"
    d1 = _in_child(tree, one, 1)
    dn = _in_child(tree, every, len(os.sched_getaffinity(0)))
    assert one.read_bytes() == every.read_bytes()
    assert d1 == dn == hashlib.sha256(one.read_bytes()).hexdigest()
    # several streams, one file: every reader sees the whole tree
    assert one.read_bytes().count(b"\xfd7zXZ\0") >= 6
    names = sorted(e.path for e in collect_tree(tree))
    with tarfile.open(one, "r:xz") as tf:
        assert sorted(m.name.rstrip("/") for m in tf.getmembers()) == names
    (tmp_path / "by-tar").mkdir()
    subprocess.run(["tar", "-xJf", str(one), "-C", str(tmp_path / "by-tar")], check=True)
    assert (tmp_path / "by-tar/lib/lib5.a").read_bytes() == (tree / "lib/lib5.a").read_bytes()
    safe_extract(one, tmp_path / "by-prebake")
    for i in range(6):
        assert (tmp_path / f"by-prebake/lib/lib{i}.a").read_bytes() == \
            (tree / f"lib/lib{i}.a").read_bytes()


def test_default_blocks_follow_the_input(tmp_path: Path) -> None:
    """Without ``block_size``, a small asset is one stream (its block covers the stream)."""
    tree = _tree(tmp_path / "t")
    buf = io.BytesIO()
    write_tar_xz(collect_tree(tree), buf, threads=2)
    assert buf.getvalue().count(b"\xfd7zXZ\0") == 1


@pytest.mark.parametrize("check", [lzma.CHECK_CRC64, lzma.CHECK_CRC32, lzma.CHECK_NONE,
                                   lzma.CHECK_SHA256])
@pytest.mark.parametrize("length", [7, 5_000, 70_000, MIB + 3, 3 * MIB])
def test_the_framing_written_by_hand_is_liblzmas(check: int, length: int) -> None:
    """``xzframe.frame`` of a stream's own parts is the stream liblzma wrote, byte for byte
    (what the block cache holds an entry to), for every check and a dictionary per size."""
    from prebake.package import xzframe

    rng = random.Random(length)
    data = rng.randbytes(length // 2) + b"abc" * (length - length // 2 // 3)
    data = data[:length]
    encoding = archive.XzEncoding(9, archive.DICT_SIZE, check)
    stream = encoding.compress(data)
    parts = xzframe.parts(stream)
    assert parts.dict_size == encoding.dict_size(length)
    assert xzframe.frame(parts.check_id, parts.dict_size, parts.lzma2, parts.check,
                         length) == stream
    assert xzframe.first_chunk(stream) == parts.first
    # a stream cut short or with a chunk header no encoder writes is named, not misread
    for bad in (stream[:30], stream[:24] + b"\x7f" + stream[25:]):
        with pytest.raises(xzframe.NotFramed):
            xzframe.parts(bad)
