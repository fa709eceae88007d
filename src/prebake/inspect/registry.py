"""The list of format readers, in sniffing order, and ``inspect(path) -> Facts`` that reads
with it. Add a format: one module + one row here.

Each format module exposes ``READER`` (one ``FormatReader``) or ``READERS`` (several, e.g. PE
images and magic-less COFF objects, in their own sniffing order). The reading itself — the
work budget, the nesting, the file checked again once read — is ``prebake.inspect.dispatch``'s,
which the format modules call down to for the binaries inside theirs; this module sits above
them and hands the dispatcher the one table (:func:`sniff`).

A format module is imported only when a file's first bytes could be its format: each row holds
a cheap pre-check that is true whenever one of the module's readers could claim the bytes (a
superset of their ``sniff``), so ``prebake link-order`` on ELF archives never pays for the
wasm, Mach-O, PE or bitcode parsers at start-up (tests/unit/test_startup.py). The readers'
own ``sniff`` still decides.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from prebake.inspect import dispatch, magic
from prebake.inspect.binreader import Source
from prebake.inspect.facts import Facts
from prebake.inspect.reader import FormatReader, ParseOptions

# Each loader imports its format module on first use (`# lazy:`): link-order on ELF archives
# loads the archive and ELF readers only (tests/unit/test_startup.py).


def _archive() -> Sequence[FormatReader]:
    from prebake.inspect import archive  # lazy: a format's module loads for its bytes only
    return (archive.READER,)


def _elf() -> Sequence[FormatReader]:
    from prebake.inspect import elf  # lazy: a format's module loads for its bytes only
    return (elf.READER,)


def _wasm() -> Sequence[FormatReader]:
    from prebake.inspect import wasm  # lazy: a format's module loads for its bytes only
    return (wasm.READER,)


def _bitcode() -> Sequence[FormatReader]:
    from prebake.inspect import bitcode  # lazy: a format's module loads for its bytes only
    return (bitcode.READER,)


def _macho() -> Sequence[FormatReader]:
    from prebake.inspect import macho  # lazy: a format's module loads for its bytes only
    return tuple(macho.READERS)


def _pe() -> Sequence[FormatReader]:
    from prebake.inspect import pe  # lazy: a format's module loads for its bytes only
    return tuple(pe.READERS)


@dataclass(frozen=True)
class Format:
    """One format module: its name, the cheap pre-check of the first bytes, its readers."""

    name: str
    maybe: Callable[[bytes], bool]
    load: Callable[[], Sequence[FormatReader]]


def _first(*magics: bytes) -> Callable[[bytes], bool]:
    n = len(magics[0])
    wanted = frozenset(magics)
    return lambda head: head[:n] in wanted


def _anything(head: bytes) -> bool:
    return True


# Specific magics first; ``pe`` last because its COFF-object reader sniffs a bare machine u16
# (no magic): it is imported only when nothing above claimed the bytes.
FORMATS: tuple[Format, ...] = (
    Format("archive", _first(magic.AR, magic.AR_THIN), _archive),
    Format("elf", _first(magic.ELF), _elf),
    Format("wasm", _first(magic.WASM), _wasm),
    Format("bitcode", _first(magic.BITCODE_RAW, magic.BITCODE_WRAPPER), _bitcode),
    Format("macho", _first(*magic.MACHO, *magic.MACHO_FAT), _macho),
    Format("pe", _anything, _pe),
)
FORMAT_MODULES = tuple(f.name for f in FORMATS)

_loaded: dict[str, Sequence[FormatReader]] = {}


def module_readers(name: str) -> Sequence[FormatReader]:
    """The readers of one format module, importing it on first use."""
    got = _loaded.get(name)
    if got is None:
        got = _loaded[name] = next(f for f in FORMATS if f.name == name).load()
    return got


def readers() -> list[FormatReader]:
    """Every reader in sniffing order (imports every format module)."""
    return [r for name in FORMAT_MODULES for r in module_readers(name)]


def sniff(head: bytes) -> FormatReader | None:
    """The first reader, in registry order, whose ``sniff`` claims these first bytes."""
    for f in FORMATS:
        if f.maybe(head):
            for reader in _loaded.get(f.name) or module_readers(f.name):
                if reader.sniff(head):
                    return reader
    return None


def inspect(path: str | os.PathLike[str], opts: ParseOptions | None = None) -> Facts:
    """Facts of a file on disk. Raises ``FormatError`` (exit 2) with the path on bad input."""
    return dispatch.inspect(path, opts, sniff)


def inspect_bytes(data: Source, path: str, opts: ParseOptions | None = None) -> Facts:
    """Facts of a binary in memory or in a file window."""
    return dispatch.inspect_bytes(data, path, opts, sniff)
