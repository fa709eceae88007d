"""The binary inspector: ``inspect(path) -> Facts`` for ELF, Mach-O, PE/COFF, wasm, ar, bitcode.

This face only re-exports. The reader is picked by the first bytes (docs/binary-formats.md §0)
from the table in ``registry`` (one module per format); the reading, its work budget and its
nesting are ``dispatch``'s, which the formats that hold other binaries call down to.
"""

from __future__ import annotations

from prebake.errors import FormatError
from prebake.inspect.dispatch import MAX_NESTING, OverBudget, Work, grant, own_file, special_kind
from prebake.inspect.facts import Facts
from prebake.inspect.reader import FormatReader, ParseOptions
from prebake.inspect.registry import inspect, inspect_bytes, readers, sniff

__all__ = ["MAX_NESTING", "Facts", "FormatError", "FormatReader", "OverBudget", "ParseOptions",
           "Work", "grant", "inspect", "inspect_bytes", "own_file", "readers", "sniff",
           "special_kind"]
