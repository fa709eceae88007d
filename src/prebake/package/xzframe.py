"""The framing of one single-block ``.xz`` stream as liblzma's stream encoder writes it, built
and read by hand (The .xz File Format 1.2.1, tukaani.org: §2.1 streams, §3 blocks, §4 the
index; §5.3.1 the LZMA2 filter; LZMA2's chunk headers as liblzma's ``lzma2_decoder.c`` reads
them), for the block cache to hold an entry to the bytes the cold path writes.

A stream is: the stream header (magic, flags naming the check, CRC32), one block (its header:
size, flags, the filter chain with its properties, padding, CRC32; the LZMA2 data, a run of
chunks ending in a 0x00; padding to four bytes; the check of the uncompressed data), the index
(one record: unpadded and uncompressed size; padding; CRC32) and the footer (CRC32, backward
size, the flags again, ``YZ``). Everything but the LZMA2 data follows from the check type, the
dictionary size, the data's length and its check value; :func:`frame` writes it so, and the
cache compares an entry with :func:`frame` of its own parts (``tests/unit/test_package_blocks``
holds :func:`frame` to liblzma's own output).
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

MAGIC = b"\xfd7zXZ\x00"
FOOTER_MAGIC = b"YZ"
LZMA2_ID = 0x21
#: the check field's length per check id (CRC32 4, CRC64 8, SHA-256 32; none 0)
CHECK_SIZE = {0x00: 0, 0x01: 4, 0x04: 8, 0x0A: 32}


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _pad4(n: int) -> bytes:
    return b"\0" * (-n % 4)


def dict_byte(dict_size: int) -> int:
    """LZMA2's one property byte: the smallest encoded size that holds ``dict_size`` (a byte
    ``b`` stands for ``(2 | b & 1) << (b // 2 + 11)`` bytes; 40: 4 GiB - 1)."""
    for b in range(40):
        if (2 | (b & 1)) << (b // 2 + 11) >= dict_size:
            return b
    return 40


def stream_flags(check_id: int) -> bytes:
    return bytes((0, check_id))


def stream_header(check_id: int) -> bytes:
    flags = stream_flags(check_id)
    return MAGIC + flags + struct.pack("<I", zlib.crc32(flags))


def block_header(dict_size: int) -> bytes:
    """One LZMA2 filter, no sizes in the header (liblzma's stream encoder does not know them
    when it writes it)."""
    body = bytes((0x00, LZMA2_ID, 0x01, dict_byte(dict_size)))
    size = 1 + len(body) + 4
    size += -size % 4
    head = bytes(((size // 4) - 1,)) + body
    head += b"\0" * (size - 4 - len(head))
    return head + struct.pack("<I", zlib.crc32(head))


def frame(check_id: int, dict_size: int, lzma2: bytes, check: bytes, uncompressed: int) -> bytes:
    """The whole stream around ``lzma2`` (the block's compressed data) and ``check``."""
    header = block_header(dict_size)
    unpadded = len(header) + len(lzma2) + len(check)
    index = b"\0" + _varint(1) + _varint(unpadded) + _varint(uncompressed)
    index += _pad4(len(index))
    index += struct.pack("<I", zlib.crc32(index))
    backward = struct.pack("<I", len(index) // 4 - 1) + stream_flags(check_id)
    footer = struct.pack("<I", zlib.crc32(backward)) + backward + FOOTER_MAGIC
    block = header + lzma2 + _pad4(len(header) + len(lzma2)) + check
    return stream_header(check_id) + block + index + footer


@dataclass(frozen=True)
class Parts:
    """What :func:`frame` is built from, read from an entry: the check id of its flags, the
    LZMA2 data and the check field; ``first`` is the first chunk's bytes (header, properties,
    data) and ``first_size`` its uncompressed length."""

    check_id: int
    dict_size: int  # from the filter's property byte
    lzma2: bytes
    check: bytes
    first: bytes
    first_size: int


class NotFramed(ValueError):
    """An entry whose framing cannot be read (said in words, for the log)."""


def _chunks_end(data: bytes, start: int) -> tuple[int, int, int]:
    """The end of the LZMA2 data starting at ``start`` (after its 0x00), and the first
    chunk's end and uncompressed size. Every length is checked against ``data``."""
    pos, first_end, first_size = start, -1, 0
    while True:
        if pos >= len(data):
            raise NotFramed("its LZMA2 data has no end marker")
        control = data[pos]
        if control == 0x00:
            if first_end < 0:
                raise NotFramed("its block holds no data")
            return pos + 1, first_end, first_size
        if pos + 3 > len(data):
            raise NotFramed("its LZMA2 data ends inside a chunk header")
        if control in (0x01, 0x02):
            size = (data[pos + 1] << 8 | data[pos + 2]) + 1
            unpacked, nxt = size, pos + 3 + size
        elif control >= 0x80:
            if pos + 5 > len(data):
                raise NotFramed("its LZMA2 data ends inside a chunk header")
            unpacked = ((control & 0x1F) << 16 | data[pos + 1] << 8 | data[pos + 2]) + 1
            nxt = pos + 5 + (control >= 0xC0) + (data[pos + 3] << 8 | data[pos + 4]) + 1
        else:
            raise NotFramed(f"an LZMA2 chunk header 0x{control:02x}, which no encoder writes")
        if first_end < 0:
            if control not in (0x01,) and control < 0xE0:
                raise NotFramed("its first LZMA2 chunk does not reset the dictionary")
            first_end, first_size = nxt, unpacked
        pos = nxt


def parts(entry: bytes) -> Parts:
    """The parts of one single-block LZMA2 stream (raises :class:`NotFramed`); whether they
    are framed as :func:`frame` frames them is the caller's comparison."""
    if len(entry) < 12 + 12 + 12 or entry[:6] != MAGIC:
        raise NotFramed("not an .xz stream")
    check_id = entry[7]
    if entry[6] != 0 or check_id not in CHECK_SIZE:
        raise NotFramed(f"stream flags {entry[6:8].hex()}")
    head_size = (entry[12] + 1) * 4
    start = 12 + head_size
    if entry[13] & 0x03 or start > len(entry):  # more than one filter, or past the end
        raise NotFramed("its block has a filter chain of more than one filter")
    if entry[14] != LZMA2_ID or entry[15] != 1 or entry[16] > 40:
        raise NotFramed(f"its block's filter is 0x{entry[14]:02x}, not LZMA2")
    dict_size = (2 | (entry[16] & 1)) << (entry[16] // 2 + 11)
    end, first_end, first_size = _chunks_end(entry, start)
    pad = -(head_size + end - start) % 4
    check = entry[end + pad:end + pad + CHECK_SIZE[check_id]]
    return Parts(check_id, dict_size, entry[start:end], check, entry[start:first_end],
                 first_size)


def first_chunk(stream: bytes) -> bytes:
    """The first LZMA2 chunk of a stream liblzma wrote (for the re-encoded head)."""
    start = 12 + (stream[12] + 1) * 4
    _, first_end, _ = _chunks_end(stream, start)
    return stream[start:first_end]
