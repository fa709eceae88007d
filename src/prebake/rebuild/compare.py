"""Where two assets of one unit differ: the first byte, named as a file (and an archive member)
of the asset, and every file or member whose bytes differ.

The first difference is found on the decompressed tar streams, read side by side: that works
for any change — a member's bytes, a tar header's mode or time, the compression alone, or a
byte changed in the ``.tar.xz`` itself (the given stream then stops decompressing; where it
stops is named). The rebuilt asset is prebake's own and read whole; the given one is read no
further than the rebuilt one's length (a hostile file cannot make this decompress more).
"""

from __future__ import annotations

import hashlib
import lzma
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from prebake.errors import FormatError
from prebake.inspect.archive import is_archive, read_archive

CHUNK = 1 << 20
# files whose members are named in a difference (static libraries: ar archives)
ARCHIVE_SUFFIXES = (".a", ".lib")


@dataclass(frozen=True)
class Difference:
    """The first place two assets differ. ``member``: the asset's file (``None``: the tar
    stream's end or the compression); ``inner``: the archive member inside it; ``offset``: the
    byte inside the innermost of those (or of the tar stream)."""

    member: str | None
    inner: str | None
    offset: int
    detail: str

    @property
    def where(self) -> str:
        if self.member is None:
            return "(the archive itself)"
        return f"{self.member}({self.inner})" if self.inner else self.member

    def to_json(self) -> dict[str, object]:
        return {"member": self.member, "inner": self.inner, "offset": self.offset,
                "where": self.where, "detail": self.detail}


class _Stream:
    """The decompressed bytes of a ``.tar.xz``, chunk by chunk; ``error`` says why it stopped
    early (a corrupt stream), ``total`` how many bytes it gave."""

    def __init__(self, path: Path, limit: int) -> None:
        self.path, self.limit = path, limit
        self.error: str | None = None
        self.total = 0

    def chunks(self) -> Iterator[bytes]:
        dec = lzma.LZMADecompressor()
        try:
            with open(self.path, "rb") as fh:
                while self.total < self.limit and not dec.eof:
                    raw = b""
                    if dec.needs_input:
                        raw = fh.read(CHUNK)
                        if not raw:
                            self.error = "xz: the stream ends before its end marker"
                            return
                    data = dec.decompress(raw, max_length=CHUNK)[:self.limit - self.total]
                    self.total += len(data)
                    if data:
                        yield data
        except lzma.LZMAError as exc:
            self.error = f"xz: {exc}"
        except OSError as exc:
            self.error = f"cannot read: {exc.strerror}"


def stream_size(path: Path) -> int:
    """The length of a ``.tar.xz``'s tar stream (of prebake's own asset: read whole)."""
    return sum(len(c) for c in _Stream(path, 1 << 62).chunks())


def _first_offset(given: Path, rebuilt: Path, size: int) -> tuple[int, str | None]:
    """The first tar-stream offset where ``given`` differs from ``rebuilt`` (``-1``: the
    streams are equal; ``size``: the rebuilt stream's length) and why the given stream
    stopped, if it did."""
    a, b = _Stream(given, size + 1), _Stream(rebuilt, size)
    ia, ib = a.chunks(), b.chunks()
    buf_a = buf_b = b""
    pos = 0
    while True:
        if not buf_a:
            buf_a = next(ia, b"")
        if not buf_b:
            buf_b = next(ib, b"")
        if not buf_a or not buf_b:
            if not buf_a and not buf_b:
                return (-1 if a.error is None else pos), a.error
            return pos, a.error
        n = min(len(buf_a), len(buf_b))
        if buf_a[:n] != buf_b[:n]:
            i = next(k for k in range(n) if buf_a[k] != buf_b[k])
            return pos + i, None
        pos += n
        buf_a, buf_b = buf_a[n:], buf_b[n:]


def _file_offset(a: Path, b: Path) -> int:
    """The first byte where two files differ."""
    pos = 0
    with open(a, "rb") as fa, open(b, "rb") as fb:
        while True:
            x, y = fa.read(CHUNK), fb.read(CHUNK)
            if x != y:
                n = min(len(x), len(y))
                return pos + next((k for k in range(n) if x[k] != y[k]), n)
            if not x:
                return pos
            pos += len(x)


def _slice(path: Path, start: int, size: int) -> bytes | None:
    """Bytes ``start``…``start+size`` of a ``.tar.xz``'s stream (``None`` if it ends first)."""
    out = bytearray()
    s = _Stream(path, start + size)
    pos = 0
    for chunk in s.chunks():
        lo, hi = max(start - pos, 0), min(start + size - pos, len(chunk))
        if lo < hi:
            out += chunk[lo:hi]
        pos += len(chunk)
    return bytes(out) if len(out) == size else None


def first_difference(given: Path, rebuilt: Path, size: int) -> Difference:
    """Where ``given`` first differs from ``rebuilt`` (their bytes are known to differ;
    ``size``: the rebuilt tar stream's length, :func:`stream_size`)."""
    offset, error = _first_offset(given, rebuilt, size)
    if offset < 0:
        at = _file_offset(given, rebuilt)
        return Difference(None, None, at, f"every file is the same; the xz compression differs "
                                          f"(first at byte {at:,} of the .tar.xz)")
    stopped = f"the given asset stops decompressing here ({error})" if error else None
    with tarfile.open(rebuilt, "r:xz") as tf:
        for m in tf:
            if offset < m.offset:
                break
            if offset < m.offset_data:
                at = offset - m.offset
                return Difference(m.name, None, at, stopped or f"its tar header differs "
                                                               f"({_header_field(at, m)})")
            end = m.offset_data + m.size
            if offset < end:
                inner_at = offset - m.offset_data
                data = tf.extractfile(m).read() if m.isfile() else b""  # type: ignore[union-attr]
                return _in_member(given, m, data, inner_at, stopped)
    if offset >= size:
        return Difference(None, None, offset, stopped or
                          f"the given asset's tar stream is longer than the rebuilt one's "
                          f"({size:,} bytes)")
    return Difference(None, None, offset, stopped or "the tar stream's padding or end differs")


# the fields of a ustar/GNU header block: (end offset, name)
_HEADER_FIELDS = ((100, "name"), (108, "mode"), (116, "owner"), (124, "group"), (136, "size"),
                  (148, "time"), (156, "checksum"), (157, "type"), (257, "link name"),
                  (329, "magic, version or owner names"), (345, "device"), (500, "name prefix"))


def _header_field(at: int, m: tarfile.TarInfo) -> str:
    """Which field of the rebuilt member's header byte ``at`` is in."""
    block = m.offset_data - m.offset
    if at < block - 512:
        return f"byte {at} of its long-name header"
    field = next((name for end, name in _HEADER_FIELDS if at % 512 < end), "padding")
    if field == "size":
        return f"its size: {m.size:,} bytes in the rebuild"
    return f"byte {at % 512} of the header, its {field}"


def _in_member(given: Path, m: tarfile.TarInfo, data: bytes, at: int,
               stopped: str | None) -> Difference:
    """The difference inside the file ``m`` (rebuilt bytes ``data``), at byte ``at``."""
    mine = None if stopped else _slice(given, m.offset_data, m.size)
    if m.name.endswith(ARCHIVE_SUFFIXES) and is_archive(data[:8]):
        try:
            members = read_archive(data, index_names=False).members
        except FormatError:
            members = []
        for mem in members:
            if mem.header_off <= at < mem.data_off:
                return Difference(m.name, mem.name, at - mem.header_off,
                                  stopped or "its ar member header differs")
            if mem.data_off <= at < mem.data_off + mem.size:
                inner = at - mem.data_off
                return Difference(m.name, mem.name, inner,
                                  stopped or _byte_detail(inner, mem.size, data[at],
                                                          mine[at] if mine else None))
    return Difference(m.name, None, at,
                      stopped or _byte_detail(at, m.size, data[at], mine[at] if mine else None))


def _byte_detail(at: int, size: int, rebuilt: int, given: int | None) -> str:
    was = f": 0x{given:02x} here, 0x{rebuilt:02x} in the rebuild" if given is not None else ""
    return f"byte {at:,} of {size:,} differs{was}"


def member_digests(path: Path, limit: int) -> dict[str, str] | None:
    """sha256 of every file of a ``.tar.xz`` and of every member of its static libraries
    (``lib/x.a(y.o)``; a repeated member name gets ``#2``…); ``None`` when it cannot be read.
    At most ``limit`` bytes of files are read."""
    out: dict[str, str] = {}
    read = 0
    try:
        with tarfile.open(path, "r:xz") as tf:
            for m in tf:
                if not m.isfile():
                    continue
                read += m.size
                if read > limit:
                    return None
                data = tf.extractfile(m).read()  # type: ignore[union-attr]
                out[m.name] = hashlib.sha256(data).hexdigest()
                if m.name.endswith(ARCHIVE_SUFFIXES) and is_archive(data[:8]):
                    seen: dict[str, int] = {}
                    for mem in read_archive(data, index_names=False).members:
                        seen[mem.name] = seen.get(mem.name, 0) + 1
                        key = f"{m.name}({mem.name})" + (
                            f"#{seen[mem.name]}" if seen[mem.name] > 1 else "")
                        out[key] = hashlib.sha256(
                            data[mem.data_off:mem.data_off + mem.size]).hexdigest()
    except (tarfile.TarError, lzma.LZMAError, EOFError, OSError, FormatError):
        return None
    return out


def differing(given: Path, rebuilt: Path, size: int) -> list[str] | None:
    """The files and archive members whose bytes differ, in the rebuilt asset's order (one
    missing from either side counts); ``None`` when the given asset cannot be read whole (it
    is read no further than twice the rebuilt tar stream's ``size``)."""
    theirs = member_digests(rebuilt, 1 << 62)
    ours = member_digests(given, 2 * size + CHUNK)
    if theirs is None or ours is None:
        return None
    names = list(theirs) + [k for k in ours if k not in theirs]
    return [k for k in names if ours.get(k) != theirs.get(k)]
