"""Compressed xz blocks kept between builds, keyed by the sha256 of the bytes they hold.

A warm rebuild after a recipe-only change makes the same library bytes again (the flagship's
68 MB ``libonnxruntime.a``), and compressing them at preset 9 was most of its packaging (6.6 s
of 9.6 s of prebake's own steps, ``docs/flagship.md``). The archive writer cuts its tar stream
at the big files' data (``prebake.package.archive``), so such a file's blocks are the same bytes
whatever else changed, and this cache hands their compressed form back.

An entry is only ever used after it is proven to hold its key's bytes: it is decompressed
(bounded, as one ``.xz`` stream with nothing after it) and compared with the block it stands
for; one that does not match is deleted and the block compressed again, so a corrupt or
truncated entry costs time, never bytes. The key is the block's sha256 under a folder named for
the compressor (preset 9 and a fingerprint of what this liblzma makes of a fixed sample), so
another liblzma's output is never mixed into an asset: a warm build writes the bytes a cold
build on the same machine writes (``tests/unit/test_package_block_cache.py``).

Each unit has a cache folder of its own (``.prebake/blocks/<unit>``, from ``bake.layout``);
:meth:`BlockCache.prune` keeps only the entries the last asset used, so a folder never holds
much more than one compressed asset.
"""

from __future__ import annotations

import functools
import hashlib
import lzma
import random
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

from prebake.bounded import UnreadableFile, read_bounded_or_none
from prebake.errors import PrebakeError
from prebake.jsonio import atomic_write_bytes

#: a block smaller than this is compressed every time: its entry would cost more than it saves
MIN_CACHED = 1 << 20


@functools.cache
def compressor_tag(compress: Callable[[bytes], bytes], preset: int) -> str:
    """``xz<preset>-<16 hex>``: what ``compress`` makes of a fixed 128 KiB sample, hashed. An
    xz built another way (another liblzma release, another encoder) writes other bytes for the
    same input; its entries then sit in another folder and are never used here."""
    rng = random.Random(20261205)
    words = [rng.randbytes(rng.randint(2, 12)) for _ in range(1500)]
    sample = b"".join(rng.choice(words) for _ in range(20_000))[:128 << 10]
    return f"xz{preset}-{hashlib.sha256(compress(sample)).hexdigest()[:16]}"


def _holds(entry: bytes, block: bytes) -> bool:
    """Whether ``entry`` is one complete ``.xz`` stream that decompresses to ``block``."""
    dec = lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
    try:
        out = dec.decompress(entry, max_length=len(block) + 1)
    except lzma.LZMAError:
        return False
    return dec.eof and not dec.unused_data and out == block


class BlockCache:
    """One unit's folder of compressed blocks (``<key>.xz``), safe to use from threads."""

    def __init__(self, root: Path, compress: Callable[[bytes], bytes], preset: int) -> None:
        self.root = Path(root)
        self.folder = self.root / compressor_tag(compress, preset)
        self._compress = compress
        self._lock = threading.Lock()
        self._used: set[str] = set()
        self.hits = 0
        self.misses = 0  # compressed and stored for the next build
        self.small = 0  # compressed, too small to keep
        self.discarded = 0

    def compressed(self, block: bytes) -> bytes:
        """``block`` compressed: the entry for its sha256 once it is proven to hold exactly
        these bytes, else compressed now (and stored for the next build)."""
        if len(block) < MIN_CACHED:
            with self._lock:
                self.small += 1
            return self._compress(block)
        name = hashlib.sha256(block).hexdigest() + ".xz"
        path = self.folder / name
        with self._lock:
            self._used.add(name)
        entry = self._read(path, len(block))
        if entry is not None and _holds(entry, block):
            with self._lock:
                self.hits += 1
            return entry
        if entry is not None:  # not what its name says: never used, made again
            _remove(path)
            with self._lock:
                self.discarded += 1
        out = self._compress(block)
        atomic_write_bytes(path, out)  # a half-written entry is never under its name
        with self._lock:
            self.misses += 1
        return out

    @staticmethod
    def _read(path: Path, raw: int) -> bytes | None:
        """The entry's bytes, or ``None`` when there is none; an entry longer than xz could
        make of ``raw`` bytes (its worst case is a few hundred bytes over), or not a regular
        file, reads as ``b""``: not what its name says."""
        try:
            return read_bounded_or_none(path, raw + raw // 64 + 4096, "block cache entry")
        except UnreadableFile:
            return b""

    def prune(self) -> None:
        """Keep only the entries used since this cache was opened (the asset just written),
        and no folder of another compressor."""
        if not self.root.is_dir():
            return
        for other in self.root.iterdir():
            if other != self.folder:
                _remove(other)
        if self.folder.is_dir():
            for entry in self.folder.iterdir():
                if entry.name not in self._used:
                    _remove(entry)

    def summary(self) -> str:
        """``2 of 3 xz blocks from the cache`` (and the entries discarded) for the log."""
        text = (f"{self.hits} of {self.hits + self.misses + self.small} xz blocks from the "
                "cache")
        if self.discarded:
            text += (f" ({self.discarded} cache entries did not hold their blocks' bytes: "
                     "discarded)")
        return text


def _remove(p: Path) -> None:
    try:
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        else:
            p.unlink(missing_ok=True)
    except OSError as exc:
        raise PrebakeError(f"{p}: cannot remove an old block cache entry: "
                           f"{exc.strerror or exc}") from None
