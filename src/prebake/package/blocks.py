"""Compressed xz blocks kept between builds, keyed by the sha256 of the bytes they hold.

A warm rebuild after a recipe-only change makes the same library bytes again (the flagship's
68 MB ``libonnxruntime.a``), and compressing them at preset 9 was most of its packaging (6.6 s
of 9.6 s of prebake's own steps, ``docs/flagship.md``). The archive writer cuts its tar stream
at the big files' data (``prebake.package.archive``), so such a file's blocks are the same bytes
whatever else changed, and this cache hands their compressed form back.

The folder is the build's (``.prebake/blocks/<unit>``, beside the work folders a recipe's
commands write, and what a CI cache restores), so an entry is a record the build could have
written: it is used only once it is shown to be the bytes the cold path writes for its block
(:func:`proven`), else deleted and the block compressed again — a bad entry costs time, never
bytes. The proof, in order:

- the framing, byte for byte: the entry must equal ``xzframe.frame`` of its own LZMA2 data and
  check value, i.e. exactly the stream header (the check type: CRC64), the block header (one
  filter, LZMA2, with the dictionary size the cold path sets for a block of this length), the
  index and the footer that liblzma writes for it (another check, another dictionary or
  another filter chain differ here);
- the encoder's settings: the first LZMA2 chunk is compressed again from the block's first
  bytes with the cold path's settings and must be the entry's first chunk, byte for byte
  (another preset, ``lc``/``lp``/``pb``, or the extreme mode, writes another first chunk; one
  block's head costs ~0.2 s, against ~5 s for the block);
- the content: the entry decompressed (bounded, one stream with nothing after it, its CRC64
  checked by liblzma) must be the block.

What stays trusted, and why: the LZMA2 chunks after the first. Which matches an encoder chose
there is written nowhere but in those bytes, and only compressing the whole block again (what
the cache exists to save) would show a later chunk made with other settings. Such an entry
still decompresses, CRC64-checked, to exactly its block — it cannot carry other content — but
the asset would not be the cold build's bytes; ``prebake verify-rebuild`` rebuilds in a fresh
folder with no block cache, so it sees that. The key's folder is named for the compressor
(preset 9 and a fingerprint of what this liblzma makes of a fixed sample), so another liblzma's
output is never mixed in either: a warm build writes the bytes a cold build on the same
machine writes (``tests/unit/test_package_block_cache.py``).

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
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prebake.bounded import UnreadableFile, read_bounded_or_none
from prebake.errors import PrebakeError
from prebake.jsonio import atomic_write_bytes
from prebake.package import xzframe

#: a block smaller than this is compressed every time: its entry would cost more than it saves
MIN_CACHED = 1 << 20
#: input past the first chunk's end given to the encoder when it writes that chunk again: its
#: choices look a few KiB ahead (the match finder's nice length, the optimum parser's window)
HEAD_LOOKAHEAD = 64 << 10
#: the check id of an .xz stream per lzma's CHECK_* constant
_CHECK_IDS = {lzma.CHECK_NONE: 0x00, lzma.CHECK_CRC32: 0x01, lzma.CHECK_CRC64: 0x04,
              lzma.CHECK_SHA256: 0x0A}


@dataclass(frozen=True)
class XzEncoding:
    """How the cold path compresses one block: one ``.xz`` stream, one LZMA2 filter at
    ``preset``, the dictionary capped at the block's size (a dictionary larger than the data
    finds no more matches but costs its full allocation, ~670 MiB of match finder at -9; xz
    shrinks it the same way for small files) and at ``max_dict``; ``check`` as lzma names it.
    The cap is a function of the block's length only, so the output stays deterministic."""

    preset: int
    max_dict: int
    check: int = lzma.CHECK_CRC64

    def dict_size(self, length: int) -> int:
        size = 4096
        while size < min(length, self.max_dict):
            size *= 2
        return size

    def filters(self, length: int) -> list[dict[str, Any]]:
        return [{"id": lzma.FILTER_LZMA2, "preset": self.preset,
                 "dict_size": self.dict_size(length)}]

    def compress(self, block: bytes) -> bytes:
        return lzma.compress(block, format=lzma.FORMAT_XZ, check=self.check,
                             filters=self.filters(len(block)))

    def head(self, block: bytes, upto: int) -> bytes:
        """The first ``upto`` bytes of ``block`` compressed with ``block``'s settings."""
        return lzma.compress(block[:upto], format=lzma.FORMAT_XZ, check=self.check,
                             filters=self.filters(len(block)))


@functools.cache
def compressor_tag(encoding: XzEncoding) -> str:
    """``xz<preset>-<16 hex>``: what ``encoding`` makes of a fixed 128 KiB sample, hashed. An
    xz built another way (another liblzma release, another encoder) writes other bytes for the
    same input; its entries then sit in another folder and are never used here."""
    rng = random.Random(20261205)
    words = [rng.randbytes(rng.randint(2, 12)) for _ in range(1500)]
    sample = b"".join(rng.choice(words) for _ in range(20_000))[:128 << 10]
    digest = hashlib.sha256(encoding.compress(sample)).hexdigest()[:16]
    return f"xz{encoding.preset}-{digest}"


def proven(entry: bytes, block: bytes, encoding: XzEncoding) -> str | None:
    """Why ``entry`` is not the bytes ``encoding`` writes for ``block`` (one phrase for the
    log), or ``None`` when it is, as far as the module's proof reaches."""
    try:
        got = xzframe.parts(entry)
    except xzframe.NotFramed as exc:
        return str(exc)
    want = _CHECK_IDS[encoding.check]
    if got.check_id != want:
        names = {v: k for k, v in {"none": 0x00, "CRC32": 0x01, "CRC64": 0x04,
                                   "SHA-256": 0x0A}.items()}
        return f"its check is {names[got.check_id]}, the cold path's {names[want]}"
    dict_size = encoding.dict_size(len(block))
    if got.dict_size != dict_size:
        return (f"its LZMA2 dictionary is {got.dict_size} bytes, the cold path's "
                f"{dict_size}")
    if xzframe.frame(want, dict_size, got.lzma2, got.check, len(block)) != entry:
        return ("its framing is not the cold path's (the block header, the index or the "
                "footer differ)")
    head = encoding.head(block, min(len(block), got.first_size + HEAD_LOOKAHEAD))
    if xzframe.first_chunk(head) != got.first:
        return "its first LZMA2 chunk is not what the cold path's encoder writes"
    dec = lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
    try:
        out = dec.decompress(entry, max_length=len(block) + 1)
    except lzma.LZMAError as exc:
        return f"it does not decompress ({exc})"
    if not dec.eof or dec.unused_data or out != block:
        return "it does not decompress to its block's bytes"
    return None


class BlockCache:
    """One unit's folder of compressed blocks (``<key>.xz``), safe to use from threads."""

    def __init__(self, root: Path, encoding: XzEncoding) -> None:
        self.root = Path(root)
        self.encoding = encoding
        self.folder = self.root / compressor_tag(encoding)
        self._lock = threading.Lock()
        self._used: set[str] = set()
        self.hits = 0
        self.misses = 0  # compressed and stored for the next build
        self.small = 0  # compressed, too small to keep
        self.discarded: list[str] = []  # "<entry>: why", one per entry not used
        self.proof_seconds = 0.0  # summed over threads

    def compressed(self, block: bytes) -> bytes:
        """``block`` compressed: the entry for its sha256 once it is proven to be the bytes
        the cold path writes for it, else compressed now (and stored for the next build)."""
        if len(block) < MIN_CACHED:
            with self._lock:
                self.small += 1
            return self.encoding.compress(block)
        name = hashlib.sha256(block).hexdigest() + ".xz"
        path = self.folder / name
        with self._lock:
            self._used.add(name)
        entry = self._read(path, len(block))
        if entry is not None:
            t0 = time.monotonic()
            why = (proven(entry, block, self.encoding) if entry
                   else "empty, larger than its block can compress to, or not a file")
            with self._lock:
                self.proof_seconds += time.monotonic() - t0
            if why is None:
                with self._lock:
                    self.hits += 1
                return entry
            _remove(path)  # not what its name says: never used, made again
            with self._lock:
                self.discarded.append(f"{path}: {why}")
        out = self.encoding.compress(block)
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
        """``2 of 3 xz blocks from the cache, proven in 0.41 s`` (and the entries discarded,
        the first named with what differs) for the log, one line."""
        text = (f"{self.hits} of {self.hits + self.misses + self.small} xz blocks from the "
                "cache")
        if self.hits or self.discarded:
            text += f", proven in {self.proof_seconds:.2f} s"
        if self.discarded:
            n = len(self.discarded)
            text += (f"; {n} cache {'entry' if n == 1 else 'entries'} not the cold path's "
                     f"bytes, discarded and compressed again: {self.discarded[0]}")
            text += f" (+{n - 1} more)" if n > 1 else ""
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
