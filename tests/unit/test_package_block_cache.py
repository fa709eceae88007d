"""The block cache: a warm write (blocks from the cache) gives the cold write's bytes, an entry
that does not hold its block's bytes is discarded and made again, and a big file's blocks are
cut where its data starts, whatever else the asset holds.

The big files are real static libraries (LLVM 14's, from ``llvm-14-dev``); ``BIG_FILE`` is
lowered to 1 MiB so that two of about 1 MiB each are big without compressing tens of MiB.
"""

from __future__ import annotations

import io
import lzma
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from prebake.package import archive, blocks
from prebake.package.archive import block_cache, collect_tree, write_asset, write_tar_xz
from prebake.package.manifest_builder import make_manifest
from prebake.package.naming import asset_id

LLVM = Path("/usr/lib/llvm-14/lib")
BIG = ("libLLVMLTO.a", "libLLVMMCParser.a")  # 1.09 and 1.20 MB
AID = asset_id("llvmbits", "14.0.6", "linux-x86_64")

pytestmark = pytest.mark.skipif(not all((LLVM / b).is_file() for b in BIG),
                                reason="needs llvm-14-dev's static libraries")


@pytest.fixture(autouse=True, scope="module")
def one_mib_is_big() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(archive, "BIG_FILE", 1 << 20)
        yield


def make_prefix(root: Path, header: str = "#pragma once\n") -> Path:
    p = root / "prefix"
    (p / "include").mkdir(parents=True)
    (p / "lib").mkdir()
    (p / "include" / "llvmbits.h").write_text(header)
    for name in BIG:
        shutil.copyfile(LLVM / name, p / "lib" / name)
    (p / "lib" / "libsmall.a").write_bytes((LLVM / "libLLVMLTO.a").read_bytes()[:40_000])
    return p


def manifest(input_hash: str = "ab" * 32) -> dict[str, object]:
    return make_manifest(AID, input_hash=input_hash,
                         toolchain={"cc": ["clang"], "cxx": ["clang++"], "ar": ["ar"],
                                    "pin": None, "pin_version": None, "version": "14"},
                         link_order=[]).to_json()


def streams(data: bytes) -> list[bytes]:
    """The concatenated ``.xz`` streams of an asset, each as its own bytes."""
    out = []
    while data:
        dec = lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
        dec.decompress(data)
        used = len(data) - len(dec.unused_data)
        out.append(data[:used])
        data = dec.unused_data
    return out


def cold(prefix: Path, out: Path, input_hash: str = "ab" * 32) -> bytes:
    return write_asset(prefix, AID, manifest(input_hash), out).read_bytes()


@pytest.fixture(scope="module")
def warmed(tmp_path_factory: pytest.TempPathFactory, one_mib_is_big: None
           ) -> tuple[Path, bytes, Path]:
    """A prefix, its cold asset's bytes, and a block cache filled by a first warm write
    (which gave the same bytes)."""
    tmp = tmp_path_factory.mktemp("warmed")
    prefix = make_prefix(tmp)
    reference = cold(prefix, tmp / "cold")
    first = block_cache(tmp / "blocks")
    assert write_asset(prefix, AID, manifest(), tmp / "a", cache=first).read_bytes() \
        == reference
    assert (first.hits, first.misses) == (0, 2)  # the two libraries, one block each
    return prefix, reference, tmp / "blocks"


def test_a_warm_write_gives_the_cold_writes_bytes(tmp_path: Path,
                                                  warmed: tuple[Path, bytes, Path]) -> None:
    prefix, reference, filled = warmed
    shutil.copytree(filled, tmp_path / "blocks")
    again = block_cache(tmp_path / "blocks")
    assert write_asset(prefix, AID, manifest(), tmp_path / "b", cache=again).read_bytes() \
        == reference
    assert (again.hits, again.misses, again.discarded) == (2, 0, [])
    # a recipe-only change: another input hash in the manifest, the same libraries
    changed = block_cache(tmp_path / "blocks")
    warm = write_asset(prefix, AID, manifest("cd" * 32), tmp_path / "c", cache=changed)
    assert warm.read_bytes() == cold(prefix, tmp_path / "cold2", "cd" * 32) != reference
    assert (changed.hits, changed.misses) == (2, 0)


@pytest.mark.parametrize("damage", ["flipped byte", "truncated", "other bytes", "trailing junk",
                                    "empty", "a folder", "oversized"])
def test_an_entry_that_does_not_hold_its_bytes_is_discarded_never_used(
        tmp_path: Path, damage: str, warmed: tuple[Path, bytes, Path]) -> None:
    prefix, reference, filled = warmed
    shutil.copytree(filled, tmp_path / "blocks")
    folder = block_cache(tmp_path / "blocks").folder
    entries = sorted(folder.iterdir())
    assert len(entries) == 2
    victim = entries[0]
    good = victim.read_bytes()
    if damage == "flipped byte":
        bad = bytearray(good)
        bad[len(bad) // 2] ^= 0x40
        victim.write_bytes(bytes(bad))
    elif damage == "truncated":
        victim.write_bytes(good[: len(good) // 2])
    elif damage == "other bytes":  # a valid stream, of another block
        victim.write_bytes(entries[1].read_bytes())
    elif damage == "trailing junk":  # the right stream, then more
        victim.write_bytes(good + lzma.compress(b"more", format=lzma.FORMAT_XZ))
    elif damage == "empty":
        victim.write_bytes(b"")
    elif damage == "a folder":
        victim.unlink()
        victim.mkdir()
        (victim / "x").write_bytes(good)
    else:
        victim.write_bytes(good + b"\0" * (4 << 20))
    cache = block_cache(tmp_path / "blocks")
    out = write_asset(prefix, AID, manifest(), tmp_path / "b", cache=cache).read_bytes()
    assert out == reference
    assert (cache.hits, cache.misses, len(cache.discarded)) == (1, 1, 1)
    assert "discarded and compressed again: " + str(victim) in cache.summary()
    assert victim.read_bytes() == good, "the entry is made again, right this time"


def test_a_big_files_blocks_start_at_its_data_whatever_comes_before(tmp_path: Path) -> None:
    """Content-defined boundaries: a header before the libraries changes length, and the
    libraries' compressed streams are the same bytes in both assets."""
    one, two = io.BytesIO(), io.BytesIO()
    write_tar_xz(collect_tree(make_prefix(tmp_path / "x")), one, big_file=1 << 20)
    write_tar_xz(collect_tree(make_prefix(tmp_path / "y", "#pragma once\n" * 300)), two,
                 big_file=1 << 20)
    s1, s2 = streams(one.getvalue()), streams(two.getvalue())
    assert s1[0] != s2[0], "the segment with the header differs"
    for name in BIG:
        data = (LLVM / name).read_bytes()
        padded = data + b"\0" * (-len(data) % 512)
        whole = [s for s in s1 if lzma.decompress(s) == padded]
        assert len(whole) == 1, f"{name}: its data and padding are one stream of their own"
        assert whole[0] in s2


def test_without_a_big_file_the_layout_is_the_whole_stream_cut_evenly(tmp_path: Path) -> None:
    prefix = make_prefix(tmp_path)
    entries = collect_tree(prefix)
    out = io.BytesIO()
    write_tar_xz(entries, out, big_file=1 << 40, target_block=1 << 20)
    total = archive.tar_size(entries)
    size = archive.block_size_for(total, 1 << 20)
    pieces = [lzma.decompress(s) for s in streams(out.getvalue())]
    assert [len(p) for p in pieces] == [size] * (len(pieces) - 1) + [total - size * (
        len(pieces) - 1)]


def test_entries_of_another_compressor_are_never_used_and_pruned(
        tmp_path: Path, warmed: tuple[Path, bytes, Path]) -> None:
    shutil.copytree(warmed[2], tmp_path / "blocks")

    preset6 = blocks.XzEncoding(6, 8 << 20)
    other = blocks.BlockCache(tmp_path / "blocks", preset6)
    assert other.folder != block_cache(tmp_path / "blocks").folder
    data = (LLVM / BIG[0]).read_bytes()
    assert other.compressed(data) == preset6.compress(data)
    assert other.misses == 1 and other.hits == 0
    other.prune()
    assert sorted(p.name for p in (tmp_path / "blocks").iterdir()) == [other.folder.name]


def test_pruning_keeps_what_the_last_asset_used(tmp_path: Path,
                                                warmed: tuple[Path, bytes, Path]) -> None:
    shutil.copytree(warmed[2], tmp_path / "blocks")
    prefix = make_prefix(tmp_path)
    (prefix / "lib" / BIG[1]).unlink()  # the next build no longer makes it
    cache = block_cache(tmp_path / "blocks")
    write_asset(prefix, AID, manifest(), tmp_path / "b", cache=cache)
    left = list(cache.folder.iterdir())
    assert len(left) == 1 and cache.hits == 1
    assert lzma.decompress(left[0].read_bytes()).startswith((LLVM / BIG[0]).read_bytes())


# what an entry re-encoded by another hand holds: the same bytes when decompressed, another
# encoding; each must be discarded and the block compressed again
REENCODED = {
    "preset 0, no check": {"preset": 0, "check": lzma.CHECK_NONE, "same_dict": False},
    "preset 0, the same filter and dictionary": {"preset": 0, "check": lzma.CHECK_CRC64},
    "preset 5, the same filter and dictionary": {"preset": 5, "check": lzma.CHECK_CRC64},
    "preset 9 extreme, the same filter and dictionary": {"preset": 9 | lzma.PRESET_EXTREME,
                                                         "check": lzma.CHECK_CRC64},
    "CRC32 instead of CRC64": {"preset": 9, "check": lzma.CHECK_CRC32},
    "SHA-256 instead of CRC64": {"preset": 9, "check": lzma.CHECK_SHA256},
    "a larger dictionary": {"preset": 9, "check": lzma.CHECK_CRC64, "dict_factor": 2},
    "a smaller dictionary": {"preset": 9, "check": lzma.CHECK_CRC64, "dict_factor": 0.5},
    "lc=4 instead of 3": {"preset": 9, "check": lzma.CHECK_CRC64, "lc": 4},
    "a delta filter before LZMA2": {"preset": 9, "check": lzma.CHECK_CRC64, "delta": True},
}


def reencode(block: bytes, preset: int, check: int, same_dict: bool = True,
             dict_factor: float = 1, lc: int | None = None, delta: bool = False) -> bytes:
    lzma2: dict[str, int] = {"id": lzma.FILTER_LZMA2, "preset": preset}
    if same_dict:
        lzma2["dict_size"] = int(archive.ENCODING.dict_size(len(block)) * dict_factor)
    if lc is not None:
        lzma2["lc"] = lc
    filters = [{"id": lzma.FILTER_DELTA, "dist": 1}] if delta else []
    return lzma.compress(block, format=lzma.FORMAT_XZ, check=check, filters=[*filters, lzma2])


@pytest.mark.parametrize("how", sorted(REENCODED))
def test_an_entry_encoded_otherwise_is_discarded_and_made_again(
        tmp_path: Path, how: str, warmed: tuple[Path, bytes, Path]) -> None:
    """The entry decompresses to exactly its block, but is not the bytes the cold path writes
    (another preset, check, dictionary or filter chain): used, it would ship an asset that is
    not the cold build's (with no integrity check, for CHECK_NONE)."""
    prefix, reference, filled = warmed
    shutil.copytree(filled, tmp_path / "blocks")
    folder = block_cache(tmp_path / "blocks").folder
    victim = sorted(folder.iterdir())[0]
    good = victim.read_bytes()
    block = lzma.decompress(good)
    bad = reencode(block, **REENCODED[how])  # type: ignore[arg-type]
    assert bad != good and lzma.decompress(bad) == block
    victim.write_bytes(bad)
    cache = block_cache(tmp_path / "blocks")
    out = write_asset(prefix, AID, manifest(), tmp_path / "b", cache=cache).read_bytes()
    assert out == reference
    assert (cache.hits, cache.misses, len(cache.discarded)) == (1, 1, 1), cache.summary()
    assert cache.discarded[0].startswith(f"{victim}: "), cache.discarded
    assert victim.read_bytes() == good
