"""Reading one binary: the reader its first bytes pick, under the work budget of its file.

A file is read with plain reads: whole, or, for the readers that say ``windowed`` (archives,
ELF), only the parts they look at, through a ``binreader.FileWindow``. A file truncated or
rewritten meanwhile is a one-line error naming it (a memory map of it would end the process
with SIGBUS at the first page past the new end).

The readers that hold other binaries (an archive's members, a fat file's slices, a thin
archive's member files) call down to :func:`inspect_bytes` and :func:`inspect` here for
each of them, so every nested parse is charged to the one budget of the file named, however
deep. This module knows no reader: which reader takes which first bytes is the
``sniff`` of ``prebake.inspect.registry``, passed in by the read that starts a file and kept
for the reads nested in it.
"""

from __future__ import annotations

import errno
import os
import stat
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from prebake.errors import FormatError
from prebake.inspect.binreader import Buffer, FileWindow, Source, Truncated, whole
from prebake.inspect.facts import Facts
from prebake.inspect.reader import FormatReader, ParseOptions

# Archives inside archives inside fat files…: a hostile file must not recurse without end.
MAX_NESTING = 8

Sniff = Callable[[bytes], FormatReader | None]  # first bytes -> the reader that claims them


class OverBudget(FormatError):
    """Nested binaries would cost more work than the file's size allows: raised through every
    container up to the file named (a member's error of its own would let the next member
    spend the same again)."""


@dataclass(slots=True)
class Work:
    """What one file may still cost its nested parses (archive members, fat slices, their
    members…), fixed when the file is opened.

    Members of an archive and slices of a fat file that do not overlap hold at most the
    file's bytes at each level, so real files parse fewer than ``MAX_NESTING`` times their
    size, and at most one parse per 60 bytes (a member header). Overlapping slices (64 at
    one offset, wrapping an archive wrapping a fat file…) multiply instead: a 6.4 KB file
    would be parsed 64⁴ times. They run into this budget after a few times the file's size.
    """

    bytes_left: int
    parses_left: int

    @classmethod
    def of(cls, size: int) -> Work:
        return cls(MAX_NESTING * size, size // 16 + 64)

    def grant(self, size: int) -> None:
        """Room for a second file a container names (a thin archive's member) as if it
        were opened on its own; the caller bounds how much it grants in all."""
        more = Work.of(size)
        self.bytes_left += more.bytes_left
        self.parses_left += more.parses_left

    def spend(self, size: int, path: str) -> None:
        self.bytes_left -= size
        self.parses_left -= 1
        if self.bytes_left < 0 or self.parses_left < 0:
            raise OverBudget(path, "nested binaries (archive members, fat slices) re-read the "
                                   f"same bytes: more than {MAX_NESTING} times the file's size "
                                   "in parses; not read further")


class _Reading(threading.local):
    """The read in progress on this thread: how deep it is nested, what its file may still
    cost, the file named at the top, and the readers it reads with."""

    depth = 0
    work: Work | None = None
    file: str | None = None
    sniff: Sniff | None = None


_reading = _Reading()


def grant(size: int) -> None:
    """``Work.grant`` on the budget of the file being read (nothing outside a read)."""
    if _reading.work is not None:
        _reading.work.grant(size)


def own_file(path: str) -> Path | None:
    """The file on disk that ``path`` names, when the buffer being parsed is that whole file
    (``inspect(path)`` at the top level), else ``None``.

    A reader that follows a name to a second file (a thin archive's members, the JS glue next
    to a module) may only do so from a real file: an archive member's or fat slice's path
    (``lib.a(x.wasm)``) is built from names inside the input and names no folder at all.
    """
    if _reading.depth != 1 or _reading.file != path:
        return None
    return Path(path)


# What a parser bug-free but input-hostile path may raise; all become a one-line FormatError.
_CORRUPT = (ValueError, IndexError, OverflowError, struct.error, RecursionError, MemoryError)


def inspect_bytes(data: Source, path: str, opts: ParseOptions | None = None,
                  sniff: Sniff | None = None) -> Facts:
    """Facts of a binary in memory or in a file window (archive members and fat slices too).

    ``sniff`` picks the reader: a read that starts here names it; a nested one (called by a
    reader) reads with the one of the file it is in."""
    opts = opts or ParseOptions()
    level = _reading.depth
    pick = sniff or _reading.sniff
    if pick is None:
        raise TypeError("inspect_bytes: no reader table (prebake.inspect.inspect_bytes names it)")
    if level == 0:
        _reading.work = Work.of(len(data))
    else:
        assert _reading.work is not None
        _reading.work.spend(len(data), path)
    try:
        head = bytes(data[:64])
    except Truncated as exc:  # a file shorter than its size said (a /sys file, a race)
        raise FormatError(path, f"cannot be read whole: {exc}") from None
    reader = pick(head)
    if reader is None:
        first = head[:8].hex(" ")
        raise FormatError(path, f"not a binary format prebake knows (first bytes {first})")
    if level >= MAX_NESTING:
        raise FormatError(path, f"binaries nested more than {MAX_NESTING} deep")
    outer = _reading.sniff
    _reading.depth, _reading.sniff = level + 1, pick
    try:
        # a windowed reader takes a file window as it is; any other, the bytes
        windowed = getattr(reader, "windowed", False)
        facts = reader.parse(cast(Buffer, data) if windowed else whole(data), path, opts)
    except OverBudget as exc:
        if level == 0:  # named by the file given, with the member where it ran out
            where = "" if exc.path == path else f"{exc.path}: "
            raise FormatError(path, where + exc.reason) from None
        raise
    except Truncated as exc:
        raise FormatError(path, f"truncated or corrupt {reader.name}: {exc}") from None
    except MemoryError:  # under a memory limit (ulimit -v, a container's): the bytes are fine
        raise FormatError(path, f"cannot be read within the memory this process may use "
                                f"({reader.name}, {len(data)} bytes)") from None
    except _CORRUPT as exc:
        # what is wrong with the bytes, not which Python exception noticed it
        raise FormatError(path, f"corrupt {reader.name}: {_why(exc)}") from None
    finally:
        _reading.depth, _reading.sniff = level, outer
        if level == 0:
            _reading.work = None
    facts.size = len(data)
    return facts


def _why(exc: BaseException) -> str:
    """A parser exception's message, or what its kind says when it has none (``IndexError()``
    from a table lookup, a ``MemoryError``): never an empty reason."""
    text = str(exc).strip()
    if text:
        return text.splitlines()[0]
    if isinstance(exc, MemoryError):
        return "too big to read into memory"
    if isinstance(exc, RecursionError):
        return "nested too deep"
    return "inconsistent structure (an offset or count points outside what it describes)"


def inspect(path: str | os.PathLike[str], opts: ParseOptions | None = None,
            sniff: Sniff | None = None) -> Facts:
    """Facts of a file on disk. Raises ``FormatError`` (exit 2) with the path on bad input.
    ``sniff`` as for :func:`inspect_bytes`."""
    p = Path(path)
    name = str(path)
    try:
        # a device is never opened (opening some has effects of its own); O_NONBLOCK: a FIFO
        # swapped in after this stat must not wait for a writer, and what was opened is
        # judged again by its own fstat
        mode = p.stat().st_mode
        if not stat.S_ISREG(mode):
            what = "a folder, not a binary" if stat.S_ISDIR(mode) else (
                f"{special_kind(mode)}, not a regular file; not read")
            raise FormatError(name, f"is {what}")
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except IsADirectoryError:
        raise FormatError(name, "is a folder, not a binary") from None
    except OSError as exc:
        raise FormatError(name, _os_reason(exc)) from None
    try:
        with open(fd, "rb") as fh:
            before = os.fstat(fh.fileno())
            if stat.S_ISDIR(before.st_mode):
                raise FormatError(name, "is a folder, not a binary")
            if not stat.S_ISREG(before.st_mode):
                # a FIFO or device would block or never end: only regular files are binaries
                raise FormatError(name, f"is {special_kind(before.st_mode)}, not a regular "
                                        "file; not read")
            if before.st_size == 0:
                raise FormatError(name, "empty file")
            outer = _reading.file
            _reading.file = name if _reading.depth == 0 else None
            try:
                facts = inspect_bytes(FileWindow(fh.fileno(), 0, before.st_size), name, opts,
                                      sniff)
            except FormatError:
                _unchanged(fh.fileno(), p, before, name)  # a file cut short says so
                raise
            finally:
                _reading.file = outer
            _unchanged(fh.fileno(), p, before, name)
            return facts
    except FormatError:
        raise
    except Truncated as exc:  # a read past what the file really holds, outside any reader
        raise FormatError(name, f"cannot be read whole: {exc}") from None
    except MemoryError:
        raise FormatError(name, "too big to read into memory") from None
    except OSError as exc:
        raise FormatError(name, _os_reason(exc)) from None


def _os_reason(exc: OSError) -> str:
    """An ``OSError`` as the one line a user reads (``Too many levels of symbolic links``
    says which kind of link problem it is)."""
    if exc.errno == errno.ELOOP:
        return "symlink loop (too many levels of symbolic links); not followed"
    return exc.strerror or str(exc)


def special_kind(mode: int) -> str:
    """What a file that is not a regular file is, for a message."""
    for test, what in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISDIR, "a folder")):
        if test(mode):
            return what
    return "not a regular file"


def _unchanged(fd: int, path: Path, before: os.stat_result, name: str) -> None:
    """The facts describe the bytes read: a file truncated, rewritten or replaced since it
    was opened is an error rather than facts of a file that is no longer there."""
    now = os.fstat(fd)
    if (now.st_size, now.st_mtime_ns) != (before.st_size, before.st_mtime_ns):
        raise FormatError(name, _changed(before.st_size, now.st_size))
    try:
        there = path.stat()
    except OSError:
        there = None
    if there is None or (there.st_dev, there.st_ino) != (now.st_dev, now.st_ino):
        raise FormatError(name, "was replaced or removed while it was read; not inspected")


def _changed(was: int, now: int) -> str:
    return (f"changed while it was read ({was} bytes when opened, {now} now); "
            "not inspected")
