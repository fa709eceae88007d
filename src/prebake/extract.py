"""Safe, all-or-nothing extraction of ``.tar.xz``/``.tar.gz``/``.tgz``/``.tar``/``.zip`` archives
(and a Debian package's files, its ``data.tar`` member).

Assets and source archives come from stores and mirrors prebake does not control, so every member
is judged before it touches the disk and everything lands in a fresh temporary folder beside
``dest``; only a fully accepted archive is moved into place. A rejected archive therefore leaves
``dest`` exactly as it was and nothing outside it.

Rules (each rejection names the archive, the member and the rule):

* names: no absolute paths (``/x``, ``C:/x``), no ``..`` component, no backslash or NUL,
  no duplicates (after normalising ``./a`` == ``a``);
* types: regular files, folders, symlinks and hardlinks only (no devices, fifos, sparse files);
* symlinks must resolve inside the target (checked with the real resolved path, after every
  regular member is written, so no write ever goes through a link); no member may live *under* a
  symlink member; hardlinks must point at a regular file member of the same archive (they are
  materialised as copies);
* budgets: at most ``max_members`` members and ``max_bytes`` uncompressed bytes, and at most
  ``max_ratio`` times the archive's own size beyond a small floor (``RATIO_FLOOR``), counted from
  the headers *before* writing and from the bytes actually written — a 0.3 MB ``.tar.xz`` that
  expands to 2 GiB is refused at the first header that would pass the bound, not after filling
  the disk; ``declared`` (path -> size, from the asset's manifest) makes every member's size
  exact: a member larger than its manifest says is refused before its first byte is written.

``members`` (paths in the stripped tree: a file, or a folder and all under it) takes part of an
archive: a Debian ``-dev`` package that stands in for one header library holds 17 000 files of
which a build reads 40. Every member is still read and judged by the rules above (and counted
against the budgets), so a hostile or truncated archive is refused whole; a listed path that
names no member is an error, never an empty tree. ``skip`` is the converse, for an archive
of which a build needs all but one big folder (onnxruntime's CUDA kernels, two thirds of its
source archive, read by CUDA builds only): those paths are judged and not written, and each must
name a member as well.

It sits on the ground floor because every reader of an archive needs the same rules: the
consumer's fetch, the inspector's package walk, source unpacking and the diff's sides.
"""

from __future__ import annotations

import bz2
import contextlib
import errno
import functools
import glob
import gzip
import io
import lzma
import os
import posixpath
import queue
import re
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
import threading
import zipfile
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from prebake.cores import usable_cores
from prebake.errors import PrebakeError
from prebake.names import shown
from prebake.walk import MAX_DEPTH

NAME_MAX = 255  # bytes in one path component: Linux, macOS and Windows file systems alike

DEFAULT_MAX_BYTES = 4 * 1024**3
DEFAULT_MAX_MEMBERS = 100_000
#: uncompressed bytes may be at most this many times the archive's size (beyond the floor):
#: real assets and source tarballs compress 3-15x; a bomb compresses 1000x and more
DEFAULT_MAX_RATIO = 100
RATIO_FLOOR = 32 * 1024**2
#: bytes of members a manifest does not list (the manifest itself, generated files)
UNDECLARED_SLACK = 16 * 1024**2
_CHUNK = 1024 * 1024
_DRIVE = re.compile(r"^[A-Za-z]:")


class UnsafeArchive(PrebakeError):
    """An archive member breaks a safety rule; nothing was extracted."""

    def __init__(self, archive: Path, member: str, rule: str) -> None:
        # repr: a newline or ESC in a name cannot break the line; shortened: a 4 KB name is
        # not a message
        super().__init__(f"{archive}: member {shown(member, 120)}: {rule}; nothing was "
                         "extracted")
        self.archive = archive
        self.member = member
        self.rule = rule


@dataclass(frozen=True)
class _Member:
    """One archive member, format-independent."""

    name: str  # normalised, relative, '/'-separated
    raw: str
    kind: str  # "file" | "dir" | "symlink" | "hardlink"
    size: int
    mode: int
    mtime: float | None
    target: str = ""  # symlink target (as written) or normalised hardlink target
    open: Callable[[], IO[bytes]] | None = None


def written_mode(kind: str, mode: int) -> int:
    """The permission bits an unpack gives a folder or file member (the archive's own are not
    kept: a tree is the same whoever packed it): 0755 for folders and executables, else 0644."""
    return 0o755 if kind == "dir" or mode & 0o111 else 0o644


def _normalise(archive: Path, raw: str, strip: int) -> str | None:
    """The safe relative name of a member, ``None`` if ``strip`` removes it entirely."""
    if not raw or "\0" in raw:
        raise UnsafeArchive(archive, raw, "empty name or NUL byte")
    if "\\" in raw:
        raise UnsafeArchive(archive, raw, "backslash in name")
    if raw.startswith("/") or _DRIVE.match(raw):
        raise UnsafeArchive(archive, raw, "absolute path")
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UnsafeArchive(archive, raw, "'..' path traversal")
    if any(len(p.encode("utf-8", "surrogateescape")) > NAME_MAX for p in parts):
        raise UnsafeArchive(archive, raw, f"a name longer than {NAME_MAX} bytes (no file "
                            "system takes it)")
    if len(parts) > MAX_DEPTH:
        raise UnsafeArchive(archive, raw, f"more than {MAX_DEPTH} nested folders")
    parts = parts[strip:]
    return "/".join(parts) if parts else None


def _tar_members(archive: Path, tf: tarfile.TarFile, strip: int) -> Iterator[_Member]:
    for ti in tf:
        name = _normalise(archive, ti.name, strip)
        if ti.ischr() or ti.isblk():
            raise UnsafeArchive(archive, ti.name, "device node")
        if ti.isfifo():
            raise UnsafeArchive(archive, ti.name, "fifo")
        if ti.issparse():
            raise UnsafeArchive(archive, ti.name, "sparse file")
        if name is None:
            if ti.isdir():
                continue
            raise UnsafeArchive(archive, ti.name, "stripped to nothing but is not a folder")
        mtime = float(ti.mtime)
        if ti.isdir():
            yield _Member(name, ti.name, "dir", 0, ti.mode, mtime)
        elif ti.issym():
            yield _Member(name, ti.name, "symlink", 0, ti.mode, mtime, ti.linkname)
        elif ti.islnk():
            try:
                target = _normalise(archive, ti.linkname, strip)
            except UnsafeArchive as exc:  # name the member, not its target, as the culprit
                raise UnsafeArchive(archive, ti.name,
                                    f"hardlink to {ti.linkname!r}: {exc.rule}") from None
            if target is None:
                raise UnsafeArchive(archive, ti.name, "hardlink to nothing")
            yield _Member(name, ti.name, "hardlink", 0, ti.mode, mtime, target)
        elif ti.isreg():
            def opener(ti: tarfile.TarInfo = ti) -> IO[bytes]:
                fh = tf.extractfile(ti)
                assert fh is not None
                return fh

            yield _Member(name, ti.name, "file", ti.size, ti.mode, mtime, open=opener)
        else:
            raise UnsafeArchive(archive, ti.name, f"unsupported member type {ti.type!r}")


def _zip_members(archive: Path, zf: zipfile.ZipFile, strip: int) -> Iterator[_Member]:
    for zi in zf.infolist():
        mode = zi.external_attr >> 16
        name = _normalise(archive, zi.filename, strip)
        fmt = stat.S_IFMT(mode) if mode else 0
        if fmt in (stat.S_IFCHR, stat.S_IFBLK):
            raise UnsafeArchive(archive, zi.filename, "device node")
        if fmt in (stat.S_IFIFO, stat.S_IFSOCK):
            raise UnsafeArchive(archive, zi.filename, "fifo or socket")
        if name is None:
            if zi.is_dir():
                continue
            raise UnsafeArchive(archive, zi.filename, "stripped to nothing but is not a folder")
        mtime = None
        if zi.is_dir():
            yield _Member(name, zi.filename, "dir", 0, mode or 0o755, mtime)
        elif fmt == stat.S_IFLNK:
            if zi.file_size > 4096:
                raise UnsafeArchive(archive, zi.filename, "symlink target too long")
            target = zf.read(zi).decode("utf-8", "surrogateescape")
            yield _Member(name, zi.filename, "symlink", 0, mode, mtime, target)
        else:
            def opener(zi: zipfile.ZipInfo = zi) -> IO[bytes]:
                return zf.open(zi)

            yield _Member(name, zi.filename, "file", zi.file_size, mode or 0o644, mtime,
                          open=opener)


class _XzChild(io.RawIOBase):
    """An ``.xz`` file decompressed by ``xz -dc`` in a child process. liblzma here runs on one
    core; xz decompresses the blocks of a multi-block file on several (onnxruntime 1.21.0's
    source, 13 blocks, 319 MB: 1.55 s on one thread, 0.99 s on two; prebake's own assets are
    written in blocks too), and on another core than the one writing the files. Its errors
    end the stream as liblzma's would (``lzma.LZMAError``, which the caller words)."""

    def __init__(self, xz: str, archive: Path) -> None:
        super().__init__()
        self._proc = subprocess.Popen(
            [xz, "--decompress", "--stdout", "--quiet", f"--threads={usable_cores()}", "--",
             str(archive)],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
        assert self._proc.stdout is not None and self._proc.stderr is not None
        self._out, self._err = self._proc.stdout, self._proc.stderr

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        data = self._out.read(len(b))  # one read of the pipe (unbuffered: bufsize=0)
        n = len(data)
        b[:n] = data
        if not n and self._proc.wait() != 0:
            said = self._err.read(4096).decode(errors="replace").strip().splitlines()
            # "xz: PATH: Compressed data is corrupt": the caller names the file itself
            why = said[-1].rsplit(": ", 1)[-1] if said else f"exit status {self._proc.returncode}"
            if "memory" in why.lower():  # as liblzma's allocation failing here would say it
                raise MemoryError(why)
            raise lzma.LZMAError(f"xz: {why}")
        return n

    def close(self) -> None:
        if self._proc.poll() is None:  # stopped early (an unsafe member): nothing more is read
            self._proc.kill()
        self._proc.wait()
        self._out.close()
        self._err.close()
        super().close()


@functools.cache
def _xz_utils() -> str | None:
    """XZ Utils' ``xz`` on PATH, or None: another ``xz`` (BusyBox's) lacks the options used."""
    xz = shutil.which("xz")
    if xz is None:
        return None
    try:
        said = subprocess.run([xz, "--version"], capture_output=True, text=True, timeout=30,
                              stdin=subprocess.DEVNULL).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return xz if "XZ Utils" in said else None


def _xz(archive: Path) -> io.BufferedIOBase:
    """The ``xz`` child where the machine has XZ Utils (Debian's xz-utils), liblzma otherwise."""
    xz = _xz_utils()
    if xz is None:
        return lzma.open(archive, "rb")
    return io.BufferedReader(_XzChild(xz, archive), _CHUNK)


# the stream is closed by _ReadAhead.close(), hence no context managers here
_MAGIC: tuple[tuple[bytes, Callable[[Path], io.BufferedIOBase]], ...] = (
    (b"\xfd7zXZ\x00", _xz),
    (b"\x1f\x8b", lambda p: gzip.open(p, "rb")),  # noqa: SIM115
    (b"BZh", lambda p: bz2.open(p, "rb")),  # noqa: SIM115
)


# A Debian binary package is an ar archive (debian-binary, control.tar.*, data.tar.*); its
# files are the data.tar member's. Members over this size are not a package's.
MAX_DEB_MEMBER = 1 << 30


def _deb_data(archive: Path) -> io.BufferedIOBase:
    """The ``data.tar.*`` member of a ``.deb``, decompressed (xz, gzip, bzip2 or none)."""
    with open(archive, "rb") as fh:
        if fh.read(8) != b"!<arch>\n":
            raise PrebakeError(f"{archive}: not a Debian package (no ar header)")
        while True:
            hdr = fh.read(60)
            if len(hdr) < 60 or hdr[58:60] != b"`\n":
                raise PrebakeError(f"{archive}: Debian package without a data.tar member")
            name = hdr[:16].rstrip(b" ").rstrip(b"/")
            try:
                size = int(hdr[48:58].decode("ascii"))
            except ValueError:
                raise PrebakeError(f"{archive}: bad ar member size {hdr[48:58]!r}") from None
            if size < 0 or size > MAX_DEB_MEMBER:
                raise PrebakeError(f"{archive}: ar member of {size} bytes")
            if name.startswith(b"data.tar"):
                data = fh.read(size)
                if len(data) != size:
                    raise PrebakeError(f"{archive}: truncated data.tar member")
                break
            fh.seek(size + (size & 1), 1)
    raw = io.BytesIO(data)
    if data.startswith(b"\xfd7zXZ\x00"):
        return lzma.open(raw, "rb")
    if data.startswith(b"\x1f\x8b"):
        return gzip.open(raw, "rb")
    if data.startswith(b"BZh"):
        return bz2.open(raw, "rb")
    if name != b"data.tar":
        raise PrebakeError(f"{archive}: {name.decode(errors='replace')}: compression not "
                           "supported (xz, gzip, bzip2)")
    return raw


def _decompressed(archive: Path) -> io.BufferedIOBase:
    with open(archive, "rb") as fh:
        head = fh.read(24)
    if head.startswith(b"!<arch>\ndebian-binary"):  # cached files carry no name: the bytes say
        return _deb_data(archive)
    for magic, opener in _MAGIC:
        if head.startswith(magic):
            return opener(archive)
    return open(archive, "rb")


class _ReadAhead(io.RawIOBase):
    """Decompress in a background thread while the caller writes files (liblzma and zlib
    release the GIL), the way ``tar -xJ`` overlaps ``xz -d`` and its own writes."""

    _CHUNK = 1 << 20

    def __init__(self, src: io.BufferedIOBase) -> None:
        super().__init__()
        self._src = src
        self._queue: queue.Queue[bytes | BaseException] = queue.Queue(maxsize=16)
        self._stop = threading.Event()
        self._buf = b""
        self._pos = 0
        self._eof = False
        self._thread = threading.Thread(target=self._pump, daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        try:
            while not self._stop.is_set():
                chunk = self._src.read(self._CHUNK)
                self._put(chunk)
                if not chunk:
                    return
        except BaseException as exc:  # handed to the reading thread
            self._put(exc)

    def _put(self, item: bytes | BaseException) -> None:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        while self._pos >= len(self._buf) and not self._eof:
            item = self._queue.get()
            if isinstance(item, BaseException):
                raise item
            if not item:
                self._eof = True
            self._buf, self._pos = item, 0
        n = min(len(b), len(self._buf) - self._pos)
        b[:n] = memoryview(self._buf)[self._pos:self._pos + n]
        self._pos += n
        return n

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self._src.close()
        super().close()


@dataclass(frozen=True)
class Written:
    """One entry as :func:`safe_extract` writes it: the name in the stripped tree, the kind
    (``hardlink``: a copy of the file ``target``), the permission bits of a file or folder
    (``written_mode``), the modification time set on it (``None``: none is, as for a zip's
    members), the size, a symlink's target as written, and the member's bytes (``open``,
    files only; read once, in archive order)."""

    name: str
    kind: str
    mode: int
    mtime: float | None
    size: int
    target: str = ""
    open: Callable[[], IO[bytes]] | None = None


@contextlib.contextmanager
def written_entries(archive: Path, *, strip_components: int = 0,
                    members: Sequence[str] | None = None, skip: Sequence[str] = ()
                    ) -> Iterator[Iterator[Written]]:
    """The entries an unpack of ``archive`` with these options writes, in archive order,
    without writing anything: what a tree kept from an earlier unpack is compared with
    (``prebake.sources.treeproof``). For an archive :func:`safe_extract` accepted before
    (the caller holds its verified digest): its rules are not judged again, and folders that
    only hold members (no member of their own) are not listed."""
    wanted = None if members is None else _listed(archive, members, "to take")
    skipped = _listed(archive, skip, "to leave out")
    seen: set[str] = set()

    def taken(m: _Member) -> bool:
        if m.name in seen:  # a folder listed twice: written once
            return False
        seen.add(m.name)
        take = wanted is None or _mark(wanted, m.name)
        return not _mark(skipped, m.name) and take

    def entries(listing: Iterator[_Member]) -> Iterator[Written]:
        for m in listing:
            if not taken(m):
                continue
            mode = written_mode(m.kind, m.mode) if m.kind in ("file", "dir") else 0
            mtime = m.mtime if m.kind in ("file", "dir") else None
            yield Written(m.name, m.kind, mode, mtime, m.size, m.target, m.open)

    with _open_members(archive, strip_components) as listing:
        yield entries(listing)


@contextlib.contextmanager
def _open_members(archive: Path, strip: int) -> Iterator[Iterator[_Member]]:
    try:
        if archive.name.endswith(".zip") or zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as zf:
                yield _zip_members(archive, zf, strip)
        else:
            with _ReadAhead(_decompressed(archive)) as stream, \
                    tarfile.open(fileobj=stream, mode="r|") as tf:
                yield _tar_members(archive, tf, strip)
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError, lzma.LZMAError,
            zlib.error) as exc:
        if isinstance(exc, OSError) and exc.filename:
            raise
        # lzma/zlib errors are OSError subclasses without a filename: a corrupt stream
        raise PrebakeError(f"{archive}: not a readable archive ({exc})") from None
    except MemoryError:
        # the decompressor's own allocation (an xz header asking for a 4 GiB dictionary)
        # under a memory limit: the archive asks too much, said in one line
        raise PrebakeError(f"{archive}: decompressing it needs more memory than this process "
                           "may use (a compressor dictionary too large for the memory limit?); "
                           "nothing was extracted") from None


class _WriteFailed(Exception):
    """Writing the extracted tree failed (a full or read-only destination): the destination's
    fault, never the archive's, which ``safe_extract`` says by naming ``dest``."""

    def __init__(self, err: OSError) -> None:
        super().__init__(str(err))
        self.err = err


@contextlib.contextmanager
def _writing() -> Iterator[None]:
    """Marks an ``OSError`` raised inside as a failure to write (not to read the archive)."""
    try:
        yield
    except OSError as exc:
        raise _WriteFailed(exc) from None


class DestinationError(PrebakeError):
    """The destination cannot take the files (full, read-only, gone); the archive is fine."""


def _destination_error(dest: Path, archive: Path, err: OSError) -> PrebakeError:
    if err.errno == errno.ENAMETOOLONG:  # the member's path, not the destination, is too long
        member = str(err.filename or "?")
        return PrebakeError(f"{archive}: member path {shown(member, 120)} is longer than the "
                            f"file system takes under {dest}; nothing was installed")
    why = err.strerror or str(err)
    return DestinationError(f"{dest}: {why.lower() if why[:1].isupper() else why} while "
                            f"unpacking {archive.name} there; nothing was installed (the "
                            "archive itself is intact)")


def _listed(archive: Path, paths: Sequence[str], what: str) -> dict[str, bool]:
    """Paths of the stripped tree, normalised, each unmarked until a member lies at or under
    it (a path that stays unmarked names nothing: a typo, or an archive that moved on)."""
    out = {}
    for path in paths:
        parts = [p for p in path.split("/") if p not in ("", ".")]
        if not parts or ".." in parts:
            raise PrebakeError(f"{archive}: {path!r} is not a path inside the archive "
                               f"(the paths {what} of it)")
        out["/".join(parts)] = False
    return out


def _mark(table: dict[str, bool], name: str) -> bool:
    """Whether ``name`` lies at or under a path of ``table``, marking each such path."""
    parts = name.split("/")
    hit = False
    for i in range(1, len(parts) + 1):
        prefix = "/".join(parts[:i])
        if prefix in table:
            table[prefix] = True
            hit = True
    return hit


class _Extractor:
    """Writes accepted members into ``root`` (a fresh temporary folder) and keeps the budgets."""

    def __init__(self, archive: Path, root: Path, max_bytes: int, max_members: int,
                 declared: Mapping[str, int] | None = None,
                 members: Sequence[str] | None = None, skip: Sequence[str] = ()) -> None:
        self.archive = archive
        # the listed paths, each marked once a member lies at or under it
        self.wanted = None if members is None else _listed(archive, members, "to take")
        self.skipped = _listed(archive, skip, "to leave out")
        self.seen = 0  # members judged, taken or not
        self.passed = 0  # bytes of members judged and not taken (still decompressed)
        self.root = root
        self.max_bytes = max_bytes
        self.max_members = max_members
        self.declared = declared
        self.undeclared = 0
        self.budget = "size budget"  # what set max_bytes, for the message
        self.kinds: dict[str, str] = {}
        self.implicit: set[str] = set()
        # macOS and Windows file systems are case-insensitive: "A.h" would overwrite "a.h"
        self.fold_case = sys.platform in ("darwin", "win32")
        self.folded: dict[str, str] = {}
        self.names: list[str] = []
        self.symlinks: list[_Member] = []
        self.hardlinks: list[_Member] = []
        self.written = 0
        self.mtimes: list[tuple[Path, float]] = []
        self.folders: set[Path] = set()  # made in root

    def _reject(self, m: _Member, rule: str) -> UnsafeArchive:
        return UnsafeArchive(self.archive, m.raw, rule)

    def _taken(self, name: str) -> bool:
        wanted = self.wanted is None or _mark(self.wanted, name)
        return not _mark(self.skipped, name) and wanted

    def add(self, m: _Member) -> None:
        if self.seen >= self.max_members:
            raise self._reject(m, f"more than {self.max_members} members (member budget)")
        if m.name in self.kinds:
            # a folder listed twice is harmless (some zip tools do it); anything else is not
            if not (m.kind == "dir" and self.kinds[m.name] == "dir"):
                raise self._reject(m, "duplicate member name")
            return
        if self.fold_case:
            other = self.folded.setdefault(m.name.casefold(), m.name)
            if other != m.name:
                raise self._reject(m, f"same name as {other!r} on a case-insensitive file system")
        if m.kind != "dir" and m.name in self.implicit:
            raise self._reject(m, "clashes with a folder holding other members")
        for parent in _parents(m.name):
            if self.kinds.get(parent, "dir") != "dir":
                raise self._reject(m, f"lives under non-folder member {parent!r}")
            self.implicit.add(parent)
        self.kinds[m.name] = m.kind
        self.seen += 1
        if not self._taken(m.name):
            # not written, but read all the same: it counts against the size budget
            if self.written + self.passed + m.size > self.max_bytes:
                raise self._reject(m, f"more than {self.max_bytes} uncompressed bytes "
                                      f"({self.budget})")
            self.passed += m.size
            return
        self.names.append(m.name)
        path = self.root / m.name
        if m.kind == "dir":
            with _writing():
                path.mkdir(parents=True, exist_ok=True)
                path.chmod(written_mode(m.kind, m.mode))
            self.folders.add(path)
        elif m.kind == "file":
            self._write_file(m, path)
        elif m.kind == "symlink":
            self.symlinks.append(m)
        else:
            self.hardlinks.append(m)
        if m.mtime is not None and m.kind in ("file", "dir"):
            self.mtimes.append((path, m.mtime))

    def _charge(self, m: _Member, n: int) -> None:
        self.written += n
        if self.written + self.passed > self.max_bytes:
            raise self._reject(m, f"more than {self.max_bytes} uncompressed bytes ({self.budget})")

    def _write_file(self, m: _Member, path: Path) -> None:
        if self.declared is not None:
            want = self.declared.get(m.name)
            if want is None:
                self.undeclared += m.size
                if self.undeclared > UNDECLARED_SLACK:
                    raise self._reject(m, f"more than {UNDECLARED_SLACK} bytes in members the "
                                          "asset's manifest does not list")
            elif m.size != want:
                raise self._reject(m, f"{m.size} bytes, but the asset's manifest says {want}")
        if self.written + self.passed + m.size > self.max_bytes:
            raise self._reject(m, f"more than {self.max_bytes} uncompressed bytes ({self.budget})")
        assert m.open is not None
        got = 0
        with _writing():
            if path.parent not in self.folders:  # one mkdir per folder, not one per file
                path.parent.mkdir(parents=True, exist_ok=True)
                self.folders.add(path.parent)
            out = open(path, "xb")  # noqa: SIM115 -- closed below, where a full disk shows
        with m.open() as src:
            try:
                while chunk := src.read(_CHUNK):  # a read error is the archive's: not wrapped
                    got += len(chunk)
                    if got > m.size:
                        raise self._reject(m, "more data than its header declares")
                    self._charge(m, len(chunk))
                    with _writing():
                        out.write(chunk)
            finally:
                with _writing():
                    out.close()  # flushes: ENOSPC may show only here
        with _writing():
            path.chmod(written_mode(m.kind, m.mode))

    def finish(self) -> None:
        """Hardlinks (as copies) and symlinks last, so no write ever goes through a link."""
        with _writing():
            self._finish()

    def _finish(self) -> None:
        for table, what in ((self.wanted or {}, "to take"), (self.skipped, "to leave out")):
            missing = [p for p, hit in table.items() if not hit]
            if missing:
                raise PrebakeError(f"{self.archive}: no member at {shown(missing[0], 120)} (the "
                                   f"paths {what} of it, after the stripped folders); nothing "
                                   "was extracted")
        taken = set(self.names)
        for m in self.hardlinks:
            if self.kinds.get(m.target) != "file":
                raise self._reject(m, f"hardlink to {m.target!r}, not a regular file member")
            if m.target not in taken:
                raise self._reject(m, f"hardlink to {m.target!r}, which is not taken")
            size = (self.root / m.target).stat().st_size
            self._charge(m, size)
            shutil.copy2(self.root / m.target, self.root / m.name)
        real_root = Path(os.path.realpath(self.root))
        for m in self.symlinks:
            if m.target.startswith("/") or _DRIVE.match(m.target) or "\0" in m.target:
                raise self._reject(m, f"symlink to absolute path {m.target!r}")
            lexical = posixpath.normpath(posixpath.join(posixpath.dirname(m.name), m.target))
            if lexical == ".." or lexical.startswith("../"):
                raise self._reject(m, f"symlink {m.target!r} leads outside the target")
            link = self.root / m.name
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(m.target)
        for m in self.symlinks:  # chains of links: judge the real resolution of each
            resolved = Path(os.path.realpath(self.root / m.name))
            if resolved != real_root and real_root not in resolved.parents:
                raise self._reject(m, f"symlink {m.target!r} leads outside the target")
        for path, mtime in reversed(self.mtimes):
            os.utime(path, (mtime, mtime), follow_symlinks=False)


def _move_into_place(tmp: Path, dest: Path, archive: Path, replace: bool) -> None:
    """The extracted tree becomes ``dest``: one rename, or a swap with the old content."""
    if not dest.exists():
        tmp.rename(dest)
    elif _is_empty_dir(dest):
        dest.rmdir()
        tmp.rename(dest)
    elif replace:
        old = Path(tempfile.mkdtemp(prefix=f".{dest.name}.old-{os.getpid()}-", dir=dest.parent))
        old.rmdir()
        dest.rename(old)
        tmp.rename(dest)
        shutil.rmtree(old, ignore_errors=True)
    else:
        _merge_into(tmp, dest, archive)


def _parents(name: str) -> list[str]:
    parts = name.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def _is_empty_dir(p: Path) -> bool:
    return p.is_dir() and not p.is_symlink() and not any(p.iterdir())


def _merge_into(tmp: Path, dest: Path, archive: Path) -> None:
    """Move the extracted tree into a non-empty ``dest``; refuse (before moving) any clash."""
    moves: list[tuple[Path, Path]] = []

    def plan(src: Path, dst: Path) -> None:
        for child in sorted(src.iterdir()):
            target = dst / child.name
            if child.is_dir() and not child.is_symlink() and target.is_dir() \
                    and not target.is_symlink():
                plan(child, target)
            elif target.exists() or target.is_symlink():
                raise PrebakeError(
                    f"{archive}: {target} already exists; extract into an empty folder"
                )
            else:
                moves.append((child, target))

    plan(tmp, dest)
    for src, dst in moves:
        src.rename(dst)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def remove_stale_extractions(dest: Path) -> list[str]:
    """The ``.<dest>.extract-<pid>-*`` and ``.<dest>.old-<pid>-*`` folders an extraction killed
    mid-way (SIGKILL, power loss) left beside ``dest``: removed when their process is gone
    (a live one, such as a concurrent fetch, keeps its folder)."""
    removed: list[str] = []
    if not dest.parent.is_dir():
        return removed
    for kind in ("extract", "old"):
        for p in dest.parent.glob(f".{glob_escape(dest.name)}.{kind}-*"):
            pid = p.name[len(f".{dest.name}.{kind}-"):].split("-", 1)[0]
            if pid.isdigit() and (int(pid) == os.getpid() or _alive(int(pid))):
                continue
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p, ignore_errors=True)
                removed.append(p.name)
    return removed


def glob_escape(name: str) -> str:
    return glob.escape(name)


def safe_extract(
    archive: Path,
    dest: Path,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_members: int = DEFAULT_MAX_MEMBERS,
    strip_components: int = 0,
    replace: bool = False,
    check: Callable[[Path], None] | None = None,
    max_ratio: int | None = DEFAULT_MAX_RATIO,
    declared: Mapping[str, int] | None = None,
    members: Sequence[str] | None = None,
    skip: Sequence[str] = (),
) -> list[str]:
    """Extract ``archive`` into ``dest`` all-or-nothing; returns the member names in order.

    ``dest`` missing or empty: the extracted tree becomes ``dest`` (one rename). ``dest`` not
    empty: with ``replace`` its old content is swapped out for the archive's; without, the
    archive's files are merged in, refusing any file that already exists. ``check(tree)``, when
    given, judges the extracted tree before it moves into place; if it raises, ``dest`` stays
    as it was (``fetch`` re-checks the consumer's contract there, decompressing only once).
    ``max_ratio`` bounds the uncompressed size to that many times the archive's size beyond
    ``RATIO_FLOOR`` (``None``: no ratio bound); ``declared`` holds the sizes the asset's
    manifest lists, enforced member by member before anything is written. ``members``: only
    those paths of the (stripped) tree are written, every member still judged; the names
    returned are the ones written. ``skip``: paths of the tree left out the same way (judged,
    not written), each of which must name a member.
    """
    archive = Path(archive)
    dest = Path(dest)
    budget = "size budget"
    if max_ratio is not None:
        size = archive.stat().st_size
        if RATIO_FLOOR + max_ratio * size < max_bytes:
            max_bytes = RATIO_FLOOR + max_ratio * size
            budget = (f"size budget: {max_ratio}x the archive's {size} bytes + "
                      f"{RATIO_FLOOR // 1024**2} MiB; a decompression bomb?")
    if declared is not None and sum(declared.values()) + UNDECLARED_SLACK < max_bytes:
        max_bytes = sum(declared.values()) + UNDECLARED_SLACK
        budget = "size budget: what the asset's manifest declares"
    if dest.exists() and not dest.is_dir():
        raise PrebakeError(f"{dest}: exists and is not a folder")
    created = [p for p in (dest.parent, *dest.parent.parents) if not p.exists()]
    try:
        with _writing():
            dest.parent.mkdir(parents=True, exist_ok=True)
            remove_stale_extractions(dest)
            tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.extract-{os.getpid()}-",
                                        dir=dest.parent))
    except _WriteFailed as exc:
        raise _destination_error(dest, archive, exc.err) from None
    ok = False
    try:
        ex = _Extractor(archive, tmp, max_bytes, max_members, declared, members, skip)
        ex.budget = budget
        with _open_members(archive, strip_components) as listing:
            for m in listing:
                ex.add(m)
        ex.finish()
        with _writing():
            tmp.chmod(0o755)
        if check is not None:
            check(tmp)
        with _writing():
            _move_into_place(tmp, dest, archive, replace)
        ok = True
        return ex.names
    except _WriteFailed as exc:
        raise _destination_error(dest, archive, exc.err) from None
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
        if not ok:  # leave no trace: the folders made to hold the temporary tree go too
            for p in created:
                with contextlib.suppress(OSError):
                    p.rmdir()
