"""The binary inspector: ``inspect(path) -> Facts`` for ELF, Mach-O, PE/COFF, wasm, ar, bitcode.

Dispatch is by first bytes (ABI-FACTS.md §0) over a registry of ``FormatReader`` modules, one
per format. Files are memory-mapped, never read whole into memory, so a 50 MB library costs
only the pages a parser touches.
"""

from __future__ import annotations

import mmap
import os
from pathlib import Path

from prebake.errors import FormatError
from prebake.inspect.base import FormatReader, ParseOptions
from prebake.inspect.binreader import Buffer, Truncated
from prebake.inspect.facts import Facts

__all__ = ["Facts", "ParseOptions", "inspect", "inspect_bytes", "readers"]


def readers() -> list[FormatReader]:
    """The registry, in sniffing order (specific magics first, magic-less COFF last)."""
    from prebake.inspect import registry

    return registry.READERS


def inspect_bytes(data: Buffer, path: str, opts: ParseOptions | None = None) -> Facts:
    """Facts of an in-memory binary (used for archive members and fat slices too)."""
    opts = opts or ParseOptions()
    head = bytes(data[:64])
    for reader in readers():
        if reader.sniff(head):
            try:
                facts = reader.parse(data, path, opts)
            except Truncated as exc:
                raise FormatError(path, f"truncated or corrupt {reader.name}: {exc}") from None
            except (ValueError, IndexError, OverflowError, UnicodeDecodeError) as exc:
                # struct.error is a ValueError subclass? No: it derives from Exception. See below.
                raise FormatError(path, f"corrupt {reader.name}: {exc}") from None
            facts.size = len(data)
            return facts
    raise FormatError(path, f"not a binary format prebake knows (first bytes {head[:8].hex(' ')})")


def inspect(path: str | os.PathLike[str], opts: ParseOptions | None = None) -> Facts:
    """Facts of a file on disk. Raises ``FormatError`` (exit 2) with the path on bad input."""
    p = Path(path)
    name = str(path)
    if p.is_dir():
        raise FormatError(name, "is a folder, not a binary")
    try:
        size = p.stat().st_size
        with open(p, "rb") as fh:
            if size == 0:
                raise FormatError(name, "empty file")
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                try:
                    return inspect_bytes(memoryview(mm), name, opts)
                finally:
                    # memoryviews derived from the map must be released before it closes
                    pass
    except FormatError:
        raise
    except OSError as exc:
        raise FormatError(name, exc.strerror or str(exc)) from None
