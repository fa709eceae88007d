"""The binary inspector: ``inspect(path) -> Facts`` for ELF, Mach-O, PE/COFF, wasm, ar, bitcode.

Dispatch is by first bytes (docs/binary-formats.md §0) over a registry of ``FormatReader`` modules,
one per format (``registry.py``). A file is read with plain reads: whole, or, for the readers
that say ``windowed`` (archives, ELF), only the parts they look at, through a
``binreader.FileWindow``. A file truncated or rewritten meanwhile is a one-line error naming
it (a memory map of it would end the process with SIGBUS at the first page past the new end).
"""

from __future__ import annotations

import os
import struct
import threading
from pathlib import Path
from typing import cast

from prebake.errors import FormatError
from prebake.inspect import registry
from prebake.inspect.base import FormatReader, ParseOptions
from prebake.inspect.binreader import Buffer, FileWindow, Source, Truncated, whole
from prebake.inspect.facts import Facts

__all__ = ["Facts", "FormatError", "ParseOptions", "inspect", "inspect_bytes", "own_file",
           "readers", "sniff"]

# Archives inside archives inside fat files…: a hostile file must not recurse without end.
MAX_NESTING = 8
_depth = threading.local()

# What a parser bug-free but input-hostile path may raise; all become a one-line FormatError.
_CORRUPT = (ValueError, IndexError, OverflowError, struct.error, RecursionError, MemoryError)


_readers: list[FormatReader] | None = None


def readers() -> list[FormatReader]:
    """The registry, in sniffing order (specific magics first, magic-less COFF last).

    Imports every format module on first use, then keeps the list; ``sniff`` does not need it.
    """
    global _readers
    if _readers is None:
        _readers = registry.all_readers()
    return _readers


def own_file(path: str) -> Path | None:
    """The file on disk that ``path`` names, when the buffer being parsed is that whole file
    (``inspect(path)`` at the top level), else ``None``.

    A reader that follows a name to a second file (a thin archive's members, the JS glue next
    to a module) may only do so from a real file: an archive member's or fat slice's path
    (``lib.a(x.wasm)``) is built from names inside the input and names no folder at all.
    """
    if getattr(_depth, "n", 0) != 1 or getattr(_depth, "file", None) != path:
        return None
    return Path(path)


def sniff(head: bytes) -> FormatReader | None:
    """The reader that claims these first bytes, if any (imports only the formats it might be)."""
    return registry.sniff(head)


def inspect_bytes(data: Source, path: str, opts: ParseOptions | None = None) -> Facts:
    """Facts of a binary in memory or in a file window (archive members and fat slices too)."""
    opts = opts or ParseOptions()
    head = bytes(data[:64])
    reader = sniff(head)
    if reader is None:
        first = head[:8].hex(" ")
        raise FormatError(path, f"not a binary format prebake knows (first bytes {first})")
    level = getattr(_depth, "n", 0)
    if level >= MAX_NESTING:
        raise FormatError(path, f"binaries nested more than {MAX_NESTING} deep")
    _depth.n = level + 1
    try:
        # a windowed reader takes a file window as it is; any other, the bytes
        windowed = getattr(reader, "windowed", False)
        facts = reader.parse(cast(Buffer, data) if windowed else whole(data), path, opts)
    except Truncated as exc:
        raise FormatError(path, f"truncated or corrupt {reader.name}: {exc}") from None
    except _CORRUPT as exc:
        # what is wrong with the bytes, not which Python exception noticed it
        raise FormatError(path, f"corrupt {reader.name}: "
                                f"{exc or 'inconsistent structure'}") from None
    finally:
        _depth.n = level
    facts.size = len(data)
    return facts


def inspect(path: str | os.PathLike[str], opts: ParseOptions | None = None) -> Facts:
    """Facts of a file on disk. Raises ``FormatError`` (exit 2) with the path on bad input."""
    p = Path(path)
    name = str(path)
    if p.is_dir():
        raise FormatError(name, "is a folder, not a binary")
    if p.exists() and not p.is_file():
        # a FIFO or device would block or never end: only regular files are binaries
        raise FormatError(name, "is not a regular file")
    try:
        with open(p, "rb") as fh:
            before = os.fstat(fh.fileno())
            if before.st_size == 0:
                raise FormatError(name, "empty file")
            outer = getattr(_depth, "file", None)
            _depth.file = name if getattr(_depth, "n", 0) == 0 else None
            try:
                facts = inspect_bytes(FileWindow(fh.fileno(), 0, before.st_size), name, opts)
            except FormatError:
                _unchanged(fh.fileno(), p, before, name)  # a file cut short says so
                raise
            finally:
                _depth.file = outer
            _unchanged(fh.fileno(), p, before, name)
            return facts
    except FormatError:
        raise
    except MemoryError:
        raise FormatError(name, "too big to read into memory") from None
    except OSError as exc:
        raise FormatError(name, exc.strerror or str(exc)) from None


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
