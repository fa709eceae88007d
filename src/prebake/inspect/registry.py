"""The list of format readers, in sniffing order. Add a format: one module + one row here.

Each format module exposes ``READER`` (one ``FormatReader``) or ``READERS`` (several, e.g. PE
images and magic-less COFF objects, in their own sniffing order).

A format module is imported only when a file's first bytes could be its format: each row holds
a cheap pre-check that is true whenever one of the module's readers could claim the bytes (a
superset of their ``sniff``), so ``prebake link-order`` on ELF archives never pays for the
wasm, Mach-O, PE or bitcode parsers at start-up. The readers' own ``sniff`` still decides.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from prebake.inspect import magic
from prebake.inspect.reader import FormatReader


def _first(*magics: bytes) -> Callable[[bytes], bool]:
    n = len(magics[0])
    wanted = frozenset(magics)
    return lambda head: head[:n] in wanted


def _anything(head: bytes) -> bool:
    return True


# Specific magics first; ``pe`` last because its COFF-object reader sniffs a bare machine u16
# (no magic): it is imported only when nothing above claimed the bytes.
FORMATS: tuple[tuple[str, Callable[[bytes], bool]], ...] = (
    ("archive", _first(magic.AR, magic.AR_THIN)),
    ("elf", _first(magic.ELF)),
    ("wasm", _first(magic.WASM)),
    ("bitcode", _first(magic.BITCODE_RAW, magic.BITCODE_WRAPPER)),
    ("macho", _first(*magic.MACHO, *magic.MACHO_FAT)),
    ("pe", _anything),
)
FORMAT_MODULES = tuple(name for name, _ in FORMATS)

_loaded: dict[str, list[FormatReader]] = {}


def module_readers(name: str) -> list[FormatReader]:
    """The readers of one format module, importing it on first use."""
    got = _loaded.get(name)
    if got is None:
        mod = importlib.import_module(f"prebake.inspect.{name}")
        many = getattr(mod, "READERS", None)
        got = _loaded[name] = list(many if many is not None else [mod.READER])
    return got


def all_readers() -> list[FormatReader]:
    """Every reader in sniffing order (imports every format module)."""
    return [r for name in FORMAT_MODULES for r in module_readers(name)]


def sniff(head: bytes) -> FormatReader | None:
    """The first reader, in registry order, whose ``sniff`` claims these first bytes."""
    for name, maybe in FORMATS:
        if maybe(head):
            for reader in _loaded.get(name) or module_readers(name):
                if reader.sniff(head):
                    return reader
    return None
