"""Bounded reads of small files prebake did not write (sidecars, locks, manifests, signatures,
trust settings): a regular file of at most ``limit`` bytes, or a one-line error.

A store or a checkout can hold anything under a sidecar's name: a symlink to ``/dev/zero``
(read forever, memory exhausted), a FIFO (``open`` blocks for ever), a 2 GB "checksum". The file
is opened without blocking, judged by ``fstat`` of what was really opened (no race between a
check and the read), and read no further than ``limit``.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from prebake.errors import PrebakeError

#: sidecars, locks, manifests: far below this; a larger one is not what it claims to be
SMALL_FILE = 16 * 1024 * 1024


class UnreadableFile(PrebakeError):
    """Not a regular file, or larger than the reader allows (exit code 2)."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISDIR, "a folder")):
        if test(mode):
            return name
    return "not a regular file"


def read_bounded(path: Path, limit: int = SMALL_FILE, what: str = "file") -> bytes:
    """The bytes of the regular file ``path``; raises ``FileNotFoundError`` if it is absent and
    ``UnreadableFile`` if it is special or larger than ``limit``."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except IsADirectoryError:
        raise UnreadableFile(path, f"{what} is a folder, not a file") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnreadableFile(path, f"{what} is {_kind(st.st_mode)}, not a regular file")
        if st.st_size > limit:
            raise UnreadableFile(path, f"{what} is {st.st_size} bytes, more than the "
                                 f"{limit} a {what} may have")
        chunks = []
        got = 0
        while chunk := os.read(fd, min(1 << 20, limit + 1 - got) or 1):
            chunks.append(chunk)
            got += len(chunk)
            if got > limit:
                raise UnreadableFile(path, f"{what} grew past {limit} bytes while read")
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_bounded_or_none(path: Path, limit: int = SMALL_FILE, what: str = "file"
                         ) -> bytes | None:
    """``read_bounded``, ``None`` when the file does not exist."""
    try:
        return read_bounded(path, limit, what)
    except FileNotFoundError:
        return None
