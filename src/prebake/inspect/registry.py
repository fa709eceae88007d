"""The list of format readers, in sniffing order. Add a format: one module + one name here.

Each format module exposes ``READER`` (one ``FormatReader``) or ``READERS`` (several, e.g. PE
images and magic-less COFF objects, in their own sniffing order).
"""

from __future__ import annotations

import importlib

from prebake.inspect.base import FormatReader

# Specific magics first; ``pe`` last because its COFF-object reader sniffs a bare machine u16.
FORMAT_MODULES = ("archive", "elf", "wasm", "bitcode", "macho", "pe")


def _load() -> list[FormatReader]:
    out: list[FormatReader] = []
    for name in FORMAT_MODULES:
        mod = importlib.import_module(f"prebake.inspect.{name}")
        many = getattr(mod, "READERS", None)
        out.extend(many if many is not None else [mod.READER])
    return out


READERS: list[FormatReader] = _load()
