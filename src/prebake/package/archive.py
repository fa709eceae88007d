"""Deterministic ``tar.xz`` release assets, written atomically with their sidecars.

Same tree in, same bytes out: entries are sorted, every header has a fixed mtime, uid/gid 0, empty
user/group names and a normalised mode (0755 for folders and executables, 0644 otherwise), and
the GNU tar format is used (long names go into ``././@LongLink`` entries, whose headers are fixed
too; no pax headers that could carry times or locale-dependent text).

Compression cuts the tar stream into blocks and compresses each block into its own ``.xz``
stream (concatenated streams are one valid ``.xz`` file: xz-file-format 1.1.0 §2.1.1; ``tar
-xJf``, Python's ``tarfile`` and prebake's own extraction read them). Where blocks end depends
on the content only, never on the machine, so the output is identical on 1 or 64 cores:

- the data of every file of ``BIG_FILE`` bytes or more is a *segment* of its own (from its
  first byte to the end of its padding); the headers and small files between such files are
  segments too;
- a segment is cut into equal blocks of at most ``TARGET_BLOCK``, and into two at least from
  ``TWO_BLOCKS_FROM`` (``block_size_for`` its length): the flagship's 68 MB library and
  FFmpeg's 24 MiB of shared libraries are two blocks each that two cores compress at once (one
  192 MiB block, xz's own multi-threaded default at -9, kept every asset under 192 MiB on one
  core).

So a big file's blocks are the same bytes whatever else the asset holds, and a rebuild that
makes the same library again takes their compressed form from the unit's block cache
(``prebake.package.blocks``), compressing only the segments that changed — the manifest's,
always (it names the input hash). Blocks are compressed in parallel threads (``lzma`` releases
the GIL). ``benchmarks/bench_package.py`` compares this against ``tar -c | xz -T0 -9``; see its
docstring for the figures.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
import tarfile
import tempfile
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from prebake import jsonio
from prebake.cores import usable_cores
from prebake.digest import file_sha256
from prebake.errors import PrebakeError
from prebake.manifest import Manifest
from prebake.package.blocks import BlockCache, XzEncoding
from prebake.package.naming import MAX_ASSET_BYTES, AssetId, sha256_line

FIXED_MTIME = 315532800  # 1980-01-01T00:00:00Z: the earliest time every archive format can store
PRESET = 9
# xz's own multi-threaded default block size is 3 x the dictionary (64 MiB at -9): the largest
# block, so that huge assets lose nothing to splitting.
BLOCK_SIZE = 3 * 64 * 1024 * 1024
# Blocks of at most this size: every block after the first starts with an empty dictionary,
# which costs ~3% of size on LLVM's archives at 2 blocks per 100 MiB and 2.2% on the flagship's
# 66 MiB wasm prefix (7.14 MB against 6.99), and buys two cores' speed (10.4 s against 23.5 s).
TARGET_BLOCK = 50 * 1024 * 1024
# A segment this long or longer is at least two blocks, so that two cores (CI's, this project's
# machines') compress it at once. FFmpeg's linux-x86_64 prefix is one 24 MiB segment (no file
# reaches BIG_FILE): one block, 7 942 660 bytes, compressed on one core in 10.7 s of a 248 s cold
# unit; two equal blocks, 8 037 304 bytes (+1.2 %), in about half that. A segment under it stays
# one block: below 16 MiB the core-seconds saved are few and the size lost the same share.
TWO_BLOCKS_FROM = 16 * 1024 * 1024
MANIFEST_PATH = "share/prebake/manifest.json"


@dataclass(frozen=True)
class Entry:
    """One archive member: a folder, a file (from disk or from memory) or a relative symlink."""

    path: str  # posix, relative, no leading "./"
    kind: str  # "dir" | "file" | "symlink"
    source: Path | None = None
    data: bytes | None = None
    target: str | None = None
    executable: bool = False

    @property
    def mode(self) -> int:
        if self.kind == "symlink":
            return 0o777
        return 0o755 if self.kind == "dir" or self.executable else 0o644

    def size(self) -> int:
        if self.kind != "file":
            return 0
        if self.data is not None:
            return len(self.data)
        assert self.source is not None
        return self.source.stat().st_size

    def open(self) -> BinaryIO:
        if self.data is not None:
            return io.BytesIO(self.data)
        assert self.source is not None
        return open(self.source, "rb")


def _check_link(root: Path, link: Path) -> str:
    target = str(link.readlink())
    resolved = (link.parent / target).resolve()
    if Path(target).is_absolute() or not resolved.is_relative_to(root.resolve()):
        raise PrebakeError(f"{link}: symlink points outside the tree ({target}); "
                           "refusing to package")
    return target


def collect_tree(root: Path) -> list[Entry]:
    """Every folder, file and in-tree symlink below ``root``, sorted by path."""
    root = Path(root)
    if not root.is_dir():
        raise PrebakeError(f"{root}: not a folder; nothing to package")
    out: list[Entry] = []
    for dirpath, dirnames, filenames in os.walk(root):
        d = Path(dirpath)
        for name in sorted(dirnames + filenames):
            p = d / name
            rel = p.relative_to(root).as_posix()
            st = p.lstat()
            if stat.S_ISLNK(st.st_mode):
                out.append(Entry(rel, "symlink", target=_check_link(root, p)))
                if name in dirnames:
                    dirnames.remove(name)  # do not descend through links
            elif stat.S_ISDIR(st.st_mode):
                out.append(Entry(rel, "dir"))
            elif stat.S_ISREG(st.st_mode):
                out.append(Entry(rel, "file", source=p, executable=bool(st.st_mode & 0o111)))
            else:
                raise PrebakeError(
                    f"{p}: not a regular file, folder or symlink; refusing to package")
    return sorted(out, key=lambda e: e.path)


def with_generated(entries: Iterable[Entry], generated: Mapping[str, bytes]) -> list[Entry]:
    """``entries`` plus in-memory files (replacing same-named ones) and their parent folders."""
    by_path = {e.path: e for e in entries}
    for path, data in generated.items():
        by_path[path] = Entry(path, "file", data=data)
        parts = path.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            d = "/".join(parts[:i])
            by_path.setdefault(d, Entry(d, "dir"))
    return sorted(by_path.values(), key=lambda e: e.path)


def _tarinfo(e: Entry) -> tarfile.TarInfo:
    ti = tarfile.TarInfo(e.path + ("/" if e.kind == "dir" else ""))
    ti.mtime = FIXED_MTIME
    ti.uid = ti.gid = 0
    ti.uname = ti.gname = ""
    ti.mode = e.mode
    if e.kind == "dir":
        ti.type = tarfile.DIRTYPE
    elif e.kind == "symlink":
        ti.type = tarfile.SYMTYPE
        ti.linkname = e.target or ""
    else:
        ti.type = tarfile.REGTYPE
        ti.size = e.size()
    return ti


class _Sink:
    """Counts, hashes and writes compressed bytes; refuses to grow past the asset limit."""

    def __init__(self, fh: BinaryIO, limit: int) -> None:
        self.fh = fh
        self.limit = limit
        self.size = 0
        self.sha = hashlib.sha256()

    def write(self, data: bytes) -> None:
        self.size += len(data)
        if self.size >= self.limit:
            raise PrebakeError(
                f"asset would be {self.size} bytes or more; assets of {self.limit} bytes "
                "(2 GiB) or more are refused (GitHub rejects them)"
            )
        self.sha.update(data)
        self.fh.write(data)


DICT_SIZE = 64 * 1024 * 1024  # -9's dictionary
# A file at least this large is a segment of its own (see the module's docstring): its
# compressed blocks then depend on its bytes alone, and a rebuild that makes the same file
# takes them from the block cache. Each such cut restarts xz's dictionary, which costs size
# where neighbouring files share content: on benchmarks/bench_package.py's 100 MiB of LLVM
# libraries, cutting at every file of 1, 4 or 8 MiB made the asset 6.1, 4.5 and 3.6 % larger;
# at 16 MiB (none there is that large) nothing changed. Compressing 16 MiB at -9 takes a core
# 4-10 s; the flagship's wasm library is 68 MB.
BIG_FILE = 16 << 20
_CHUNK = 1 << 20
_ENCODING = "utf-8"  # names as tarfile writes them on Linux, whatever the machine's locale


def tar_size(entries: Iterable[Entry]) -> int:
    """The length of the GNU tar stream ``write_tar_xz`` writes for ``entries`` (headers, GNU
    long-name records, data padded to 512, the two end blocks, the 10 KiB record padding)."""
    total = 1024
    for e in entries:
        name = e.path + ("/" if e.kind == "dir" else "")
        total += 512
        for long in (name, e.target or ""):
            if len(long.encode()) >= tarfile.LENGTH_NAME:  # a ././@LongLink record
                total += 512 + -(-(len(long.encode()) + 1) // 512) * 512
        total += -(-e.size() // 512) * 512
    return -(-total // tarfile.RECORDSIZE) * tarfile.RECORDSIZE


def block_size_for(stream_bytes: int, target: int = TARGET_BLOCK) -> int:
    """Equal blocks of at most ``target`` for a segment this long, and at least two from
    ``TWO_BLOCKS_FROM``: a function of the input only, so the bytes are the same on every
    machine. (Rounding to the nearest count left a 66 MiB stream one block, on one core.)"""
    blocks = max(2 if stream_bytes >= TWO_BLOCKS_FROM else 1, -(-stream_bytes // target))
    return max(1 << 16, -(-stream_bytes // blocks))


@dataclass(frozen=True)
class _Data:
    """A file's data in the tar stream: ``size`` bytes, then zeros to the next 512."""

    entry: Entry
    size: int


@dataclass(frozen=True)
class _Segment:
    """A run of the tar stream that starts a new block: header bytes and file data."""

    length: int
    pieces: tuple[bytes | _Data, ...]


def _padded(size: int) -> int:
    return -(-size // tarfile.BLOCKSIZE) * tarfile.BLOCKSIZE


def _segments(entries: Iterable[Entry], big_file: int) -> list[_Segment]:
    """The GNU tar stream of ``entries`` (what ``tarfile`` writes, byte for byte), cut before
    and after the data of every file of at least ``big_file`` bytes."""
    out: list[_Segment] = []
    pieces: list[bytes | _Data] = []
    length = total = 0
    for e in entries:
        ti = _tarinfo(e)
        header = ti.tobuf(tarfile.GNU_FORMAT, _ENCODING, "surrogateescape")
        pieces.append(header)
        length += len(header)
        if e.kind != "file" or ti.size == 0:
            continue
        data = _Data(e, ti.size)
        if ti.size < big_file:
            pieces.append(data)
            length += _padded(ti.size)
            continue
        out += [_Segment(length, tuple(pieces)), _Segment(_padded(ti.size), (data,))]
        total += length + _padded(ti.size)
        pieces, length = [], 0
    total += length + 2 * tarfile.BLOCKSIZE
    end = 2 * tarfile.BLOCKSIZE + (-total) % tarfile.RECORDSIZE  # as tarfile closes a stream
    pieces.append(tarfile.NUL * end)
    out.append(_Segment(length + end, tuple(pieces)))
    return out


def _stream(segment: _Segment) -> Iterator[bytes]:
    """The segment's bytes; a file that no longer holds the size it had is refused."""
    for piece in segment.pieces:
        if isinstance(piece, bytes):
            yield piece
            continue
        left = piece.size
        with piece.entry.open() as fh:
            while left:
                chunk = fh.read(min(left, _CHUNK))
                if not chunk:
                    raise PrebakeError(f"{piece.entry.source or piece.entry.path}: shorter "
                                       f"than the {piece.size} bytes it had when packaging "
                                       "began (changed while packaged)")
                left -= len(chunk)
                yield chunk
        if piece.size % tarfile.BLOCKSIZE:
            yield tarfile.NUL * (tarfile.BLOCKSIZE - piece.size % tarfile.BLOCKSIZE)


#: one block as one ``.xz`` stream at preset 9, CRC64, the dictionary capped at the block's
#: size (``blocks.XzEncoding``): what every asset's blocks are, and what the block cache's
#: entries are held to
ENCODING = XzEncoding(PRESET, DICT_SIZE)


def _compress_block(block: bytes) -> bytes:
    return ENCODING.compress(block)


def block_cache(folder: Path) -> BlockCache:
    """A cache of this writer's compressed blocks in ``folder`` (one per unit)."""
    return BlockCache(folder, ENCODING)


class ParallelXzWriter:
    """A write-only file object: bytes in, concatenated per-block ``.xz`` streams out.

    A block ends every ``block_size`` bytes and wherever :meth:`cut` is called; ``compress``
    turns one block into one stream (a :class:`BlockCache`'s ``compressed`` reuses earlier
    ones)."""

    def __init__(self, sink: Callable[[bytes], None], *, threads: int | None = None,
                 block_size: int = BLOCK_SIZE,
                 compress: Callable[[bytes], bytes] = _compress_block) -> None:
        self._sink = sink
        self._block_size = block_size
        self._compress = compress
        self._parts: list[bytes] = []  # the current block so far (joined once, when full)
        self._have = 0
        self._pos = 0
        self._threads = max(1, threads or usable_cores())
        self._pool = ThreadPoolExecutor(self._threads, thread_name_prefix="xz")
        self._pending: deque[Future[bytes]] = deque()

    def tell(self) -> int:
        return self._pos

    def write(self, data: bytes | bytearray | memoryview) -> int:
        n = len(data)
        self._pos += n
        if isinstance(data, bytes) and self._have + n < self._block_size:
            self._parts.append(data)  # the common case: no copy
            self._have += n
            return n
        view = memoryview(data)
        while len(view):
            take = min(len(view), self._block_size - self._have)
            self._parts.append(bytes(view[:take]))
            self._have += take
            view = view[take:]
            if self._have == self._block_size:
                self.cut()
        return n

    def cut(self, block_size: int | None = None) -> None:
        """End the current block here (the next byte starts a new one); the blocks after it
        are ``block_size`` long when given."""
        if self._have:
            self._submit(b"".join(self._parts))
            self._parts.clear()
            self._have = 0
        if block_size is not None:
            self._block_size = block_size

    def _submit(self, block: bytes) -> None:
        self._pending.append(self._pool.submit(self._compress, block))
        while len(self._pending) > self._threads:  # bound memory: at most threads+1 blocks
            self._sink(self._pending.popleft().result())

    def close(self) -> None:
        try:
            if self._pos == 0 and not self._pending:
                self._submit(b"")  # an empty stream is still one valid .xz stream
            self.cut()
            while self._pending:
                self._sink(self._pending.popleft().result())
        finally:
            self.abort()

    def abort(self) -> None:
        for f in self._pending:
            f.cancel()
        self._pending.clear()
        self._pool.shutdown(wait=True, cancel_futures=True)


def write_tar_xz(entries: Iterable[Entry], out: BinaryIO, *, threads: int | None = None,
                 limit: int = MAX_ASSET_BYTES, target_block: int = TARGET_BLOCK,
                 big_file: int | None = None, cache: BlockCache | None = None
                 ) -> tuple[str, int]:
    """Write ``entries`` (already sorted) as ``tar.xz`` to ``out``; returns (sha256, size).

    A file of ``big_file`` bytes or more (default ``BIG_FILE``) is a segment of its own, and
    each segment (``_segments``) is cut into equal blocks of at most ``target_block`` bytes;
    ``threads`` (default: the usable cores) changes only the speed, never the bytes, and so
    does ``cache``, whose entries stand in for blocks it proves they hold.
    """
    sink = _Sink(out, limit)
    writer = ParallelXzWriter(sink.write, threads=threads,
                              compress=cache.compressed if cache is not None else _compress_block)
    try:
        for segment in _segments(entries, BIG_FILE if big_file is None else big_file):
            writer.cut(block_size_for(segment.length, target_block))
            for chunk in _stream(segment):
                writer.write(chunk)
        writer.close()
    except BaseException:
        writer.abort()
        raise
    return sink.sha.hexdigest(), sink.size


def file_list(entries: Iterable[Entry]) -> list[dict[str, Any]]:
    """The manifest's ``files``: every file with sha256 and size, every symlink with its target."""
    out: list[dict[str, Any]] = []
    for e in entries:
        if e.kind == "file":
            if e.data is not None:
                digest, size = hashlib.sha256(e.data).hexdigest(), len(e.data)
            else:
                assert e.source is not None
                digest, size = file_sha256(e.source), e.source.stat().st_size
            out.append({"path": e.path, "sha256": digest, "size": size})
        elif e.kind == "symlink":
            out.append({"path": e.path, "link": e.target})
    return out


def write_asset(prefix: Path, aid: AssetId, manifest: Manifest | Mapping[str, Any],
                out_dir: Path, *,
                generated: Mapping[str, bytes] | None = None,
                entries: Iterable[Entry] | None = None, threads: int | None = None,
                cache: BlockCache | None = None) -> Path:
    """Package ``prefix`` (or the given ``entries``) as ``aid`` into ``out_dir`` with sidecars.

    ``generated`` adds in-memory files (CMake config, pkg-config) without touching ``prefix``;
    ``cache`` (``block_cache``) makes a rebuild of the same big files faster, never other bytes.
    The manifest's ``files`` is filled in here from what is actually archived, and the manifest
    is stored both as ``share/prebake/manifest.json`` and as the ``.json`` sidecar (same bytes).

    Visibility order keeps readers safe: the old ``.sha256`` goes first, then the asset and the
    ``.json`` are replaced atomically, and the new ``.sha256`` comes last — an asset is complete
    only once its checksum sidecar names it, and no file is ever seen half-written.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    base = list(entries) if entries is not None else collect_tree(prefix)
    base = [e for e in base if e.path != MANIFEST_PATH]
    content = with_generated(base, dict(generated or {}))
    data = manifest.to_json() if isinstance(manifest, Manifest) else dict(manifest)
    data["files"] = file_list(content)
    # through the typed value: no asset ships a manifest that its readers would refuse
    typed = Manifest.from_json(data, aid.manifest_name)
    manifest_bytes = jsonio.dumps(typed.to_json()).encode()
    content = with_generated(content, {MANIFEST_PATH: manifest_bytes})

    final = out_dir / aid.filename
    fd, tmp_name = tempfile.mkstemp(prefix=f".{aid.filename}.", suffix=".tmp", dir=out_dir)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as fh:
            digest, _size = write_tar_xz(content, fh, threads=threads, cache=cache)
            fh.flush()
            os.fsync(fh.fileno())
        tmp.chmod(0o644)
        (out_dir / aid.sha256_name).unlink(missing_ok=True)
        tmp.replace(final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    jsonio.atomic_write_bytes(out_dir / aid.manifest_name, manifest_bytes)
    jsonio.atomic_write_text(out_dir / aid.sha256_name, sha256_line(digest, aid.filename))
    if cache is not None:
        cache.prune()  # what this asset used stays for the next build; the rest goes
    return final
