"""The protocol every binary-format reader implements, and the context passed to it.

Contract for readers (the fuzz test holds every registered reader to it):

* ``parse`` reads only through bounds-checked accesses (``binreader.Reader``) or explicit length
  checks; a bad file raises ``Truncated``/``FormatError`` (``ValueError``, ``IndexError``,
  ``struct.error`` are converted by ``dispatch.inspect_bytes`` too, but do not rely on that).
* Work and memory are bounded by the buffer size, never by counts or sizes a header declares.
* The returned ``Facts`` must not hold memoryviews into ``data``: copy small byte strings
  with ``bytes(...)``.
* A reader whose class says ``windowed = True`` may be given a ``binreader.FileWindow``
  (``inspect()`` of a file, or a member of such an archive) instead of a buffer: it reads
  by slices (``data[a:b]``, which reads those bytes) and hands members on with
  ``binreader.part``. Any other reader gets the whole binary as a buffer.
* Nested binaries (archive members, fat slices) are parsed with
  ``prebake.inspect.dispatch.inspect_bytes(view, "lib.a(member.o)", opts)`` (a module below
  every reader), which charges each to the file's ``Work`` budget; a reader that turns a
  member's ``FormatError`` into that member's error must let ``OverBudget`` through (the
  next member would spend the same again).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from prebake.inspect.binreader import Buffer
from prebake.inspect.facts import Facts


@dataclass(frozen=True)
class ParseOptions:
    """What the caller needs: ``symbols`` asks for full symbol lists (slower on big archives)."""

    symbols: bool = False
    # Opt-in extra details: per-family wasm instruction counts and Asyncify's instrumentation
    # count (every instruction is decoded without it).
    deep: bool = False
    # With ``symbols``: an archive's own lists too (its index's names, what no member
    # defines), not only each member's. The human view lists members alone; leaving these
    # out saves a fifth of the symbol listing of a big C++ archive.
    archive_lists: bool = True
    # The tree being checked, when the file was found in one (a folder walked, a package
    # unpacked): a thin archive's members may then be anywhere inside it, not only in the
    # archive's own folder. Nothing outside it is ever read.
    root: str | None = None


class FormatReader(Protocol):
    """One binary format. ``sniff`` sees the first bytes; ``parse`` sees the whole buffer."""

    name: str

    def sniff(self, head: bytes) -> bool: ...

    def parse(self, data: Buffer, path: str, opts: ParseOptions) -> Facts: ...
