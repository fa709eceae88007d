"""Bounds-checked little/big-endian reads over a buffer (bytes, memoryview or mmap).

Every parser reads through this, so a truncated or hostile file raises ``Truncated`` (turned
into a one-line ``FormatError`` naming the file) instead of ``struct.error`` or a huge
allocation: lengths taken from headers are checked against the buffer before use.
"""

from __future__ import annotations

import mmap
import os
import struct
from typing import TypeAlias

Buffer: TypeAlias = bytes | bytearray | memoryview | mmap.mmap

_U16LE = struct.Struct("<H")
_U32LE = struct.Struct("<I")
_U64LE = struct.Struct("<Q")
_U16BE = struct.Struct(">H")
_U32BE = struct.Struct(">I")
_U64BE = struct.Struct(">Q")


class Truncated(ValueError):
    """A read ran past the end of the data, or a declared size does not fit in it."""


HEAD = 64  # bytes at the start of a window kept once read


#: the most one read returns on Linux (``MAX_RW_COUNT``): larger reads are made of several
MAX_READ = 0x7FFFF000


def read_at(fd: int, n: int, offset: int, chunk: int = MAX_READ) -> bytes | bytearray:
    """Exactly ``n`` bytes of ``fd`` from ``offset``, by as many reads as that takes (one
    ``pread`` returns at most ``MAX_READ`` bytes, and fewer for a pipe or a signal); a file
    that ends first is ``Truncated``, never fewer bytes."""
    if n <= chunk:
        got = os.pread(fd, n, offset)
        if len(got) == n:
            return got
    buf = bytearray(n)
    view = memoryview(buf)
    done = 0
    while done < n:
        step = os.preadv(fd, [view[done : done + min(chunk, n - done)]], offset + done)
        if step == 0:
            raise Truncated(f"the file ended at {offset + done} bytes while it was read")
        done += step
    view.release()
    return buf  # not copied into a bytes object: 2 GiB more would be spent on that alone


class FileWindow:
    """``size`` bytes of an open file from ``start``, read when sliced (``window[a:b]`` is
    ``bytes``), for the readers that need only a few parts of a big file: an archive's
    member headers, and an ELF object's headers, names and symbols (a third of the bytes of a
    C++ archive). A file that has become shorter meanwhile is ``Truncated``, never zeros; a
    memory map would end the process with SIGBUS there instead.
    """

    __slots__ = ("fd", "head", "size", "start")

    def __init__(self, fd: int, start: int, size: int) -> None:
        self.fd = fd
        self.start = start
        self.size = size
        self.head = b""  # the first bytes, read once: the sniff and the reader both want them

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, key: slice) -> bytes:
        start, stop, step = key.indices(self.size)
        if step != 1:
            raise ValueError("a file window is read by contiguous slices only")
        if stop <= len(self.head):
            return self.head[start:stop]
        got = bytes(read_at(self.fd, max(0, stop - start), self.start + start))
        if start == 0 and not self.head:
            self.head = got[:HEAD]
        return got

    def part(self, start: int, end: int) -> FileWindow:
        """The bytes ``start..end`` of this window, as a window of their own (nothing read)."""
        start, end, _ = slice(start, end).indices(self.size)
        return FileWindow(self.fd, self.start + start, max(0, end - start))


Source: TypeAlias = Buffer | FileWindow


def part(data: Source, start: int, end: int) -> Source:
    """The bytes ``start..end`` of ``data`` without reading them: a view of a buffer, or a
    window of a file window."""
    if isinstance(data, FileWindow):
        return data.part(start, end)
    return memoryview(data)[start:end]


def whole(data: Source) -> Buffer:
    """``data`` as a buffer, for readers that walk all of a binary (a window is read)."""
    if isinstance(data, FileWindow):  # read in place: no second copy of a 2 GiB module
        return memoryview(read_at(data.fd, data.size, data.start))
    return data


class Reader:
    """Random-access reads with bounds checks; ``le`` picks the byte order of ``u16/u32/u64``."""

    __slots__ = ("buf", "le", "size")

    def __init__(self, buf: Buffer, le: bool = True) -> None:
        self.buf = buf
        self.size = len(buf)
        self.le = le

    def check(self, off: int, n: int, what: str = "data") -> None:
        if off < 0 or n < 0 or off + n > self.size:
            raise Truncated(f"{what} at offset {off} (+{n}) runs past the end ({self.size} bytes)")

    def bytes(self, off: int, n: int, what: str = "data") -> bytes:
        self.check(off, n, what)
        return bytes(self.buf[off : off + n])

    def view(self, off: int, n: int, what: str = "data") -> memoryview:
        self.check(off, n, what)
        return memoryview(self.buf)[off : off + n]

    def u8(self, off: int) -> int:
        self.check(off, 1, "u8")
        return int(self.buf[off])

    def u16(self, off: int) -> int:
        self.check(off, 2, "u16")
        return int((_U16LE if self.le else _U16BE).unpack_from(self.buf, off)[0])

    def u32(self, off: int) -> int:
        self.check(off, 4, "u32")
        return int((_U32LE if self.le else _U32BE).unpack_from(self.buf, off)[0])

    def u64(self, off: int) -> int:
        self.check(off, 8, "u64")
        return int((_U64LE if self.le else _U64BE).unpack_from(self.buf, off)[0])

    def cstr(self, off: int, limit: int = 1 << 16) -> str:
        """A NUL-terminated string (decoded leniently: names in binaries are not trusted text)."""
        if off < 0 or off >= self.size:
            raise Truncated(f"string at offset {off} is outside the data ({self.size} bytes)")
        end = bytes(self.buf[off : min(self.size, off + limit)]).find(b"\0")
        if end < 0:
            raise Truncated(f"string at offset {off} has no terminator")
        return bytes(self.buf[off : off + end]).decode("utf-8", "replace")


def table(
    buf: Source, off: int, count: int, st: struct.Struct, what: str = "table"
) -> list[tuple[int, ...]]:
    """``count`` records of ``st`` at ``off``, unpacked in one C loop after one bounds check.

    The declared count is checked against the buffer before anything is allocated (or, from
    a file window, read), so a header claiming 2**32 entries costs nothing.
    """
    n = count * st.size
    if off < 0 or count < 0 or off + n > len(buf):
        raise Truncated(
            f"{what}: {count} × {st.size} bytes at offset {off} run past the end ({len(buf)} bytes)"
        )
    if count == 0:
        return []
    return list(st.iter_unpack(buf[off : off + n]))


def cstring_at(strtab: bytes, off: int) -> str:
    """The NUL-terminated name at ``off`` in a string table (empty when out of range)."""
    if off < 0 or off >= len(strtab):
        return ""
    end = strtab.find(b"\0", off)
    raw = strtab[off:] if end < 0 else strtab[off:end]
    return raw.decode("utf-8", "replace")


def names_at(strtab: bytes, offsets: list[int]) -> list[str]:
    """Many names from one string table: the hot path of symbol listing.

    ASCII tables (nearly all) are decoded once and sliced as ``str``, which avoids a bytes
    object and a decode per symbol.
    """
    if strtab.isascii():
        s = strtab.decode("ascii")
        if not s.endswith("\0"):
            s += "\0"
        last = len(s) - 1  # the final NUL: an out-of-range offset reads as ""
        if offsets and max(offsets) > last:
            offsets = [o if o <= last else last for o in offsets]
        find = s.find
        return [s[o : find("\0", o)] for o in offsets]
    return [cstring_at(strtab, o) for o in offsets]
