"""The readers' hot loops in plain Python: the reference ``_scan.c`` is held to.

Every function here has a twin of the same name and signature in the C extension
``prebake.inspect._scan``; ``prebake.inspect.hotloops.scan`` is that extension where setup.py
built it and this module where it did not. ``tests/unit/test_scan.py`` gives both the same
generated hostile input and requires the same answers, and runs the readers on real archives
with each. They are written to be read: ``struct``, slices and a loop.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from prebake.inspect.binreader import Buffer, cstring_at
from prebake.inspect.demangle import demangle_once

# wasm_symbols' answer: (defined, undefined, exports, weak, every undefined name, every name)
WasmSymbols = tuple[list[str], list[str], list[str], set[str], list[str], set[str]]

_CONSTS = Path(__file__).with_name("_scan_consts.h")
_CONST_NAMES = ("PROBE_TAIL", "PROBE_HASH_MUL", "PROBE_HASH_BITS", "PROBE_BITMAP_BYTES")


def _probe_constants(path: Path = _CONSTS) -> dict[str, int]:
    """The probe's constants from the header ``_scan.c`` includes: one definition for both
    languages. Read bounded (the file is a few hundred bytes); a name missing, repeated or
    unknown is an error here, not a probe that quietly disagrees with the C one."""
    with open(path, "rb") as fh:
        text = fh.read(1 << 14).decode("ascii")
    found = [line.split()[1:] for line in text.splitlines()
             if line.startswith("#define PROBE_")]
    try:
        values = {name: int(value.removesuffix("u")) for name, value in found}
    except ValueError:  # a line of more or fewer than two words, or a value not decimal
        values = {}
    if sorted(values) != sorted(_CONST_NAMES) or len(found) != len(_CONST_NAMES):
        raise ImportError(f"{path}: want one #define each of {', '.join(_CONST_NAMES)}, "
                          f"found {'; '.join(' '.join(f) for f in found) or 'none'}")
    if values["PROBE_BITMAP_BYTES"] * 8 != 1 << values["PROBE_HASH_BITS"]:
        raise ImportError(f"{path}: PROBE_BITMAP_BYTES is not one bit per hash value")
    return values


_VALUES = _probe_constants()
PROBE_TAIL = _VALUES["PROBE_TAIL"]  # the bytes of a candidate's end ``tails`` are keyed by
PROBE_HASH_MUL = _VALUES["PROBE_HASH_MUL"]
PROBE_HASH_BITS = _VALUES["PROBE_HASH_BITS"]
PROBE_BITMAP_BYTES = _VALUES["PROBE_BITMAP_BYTES"]  # ``probe``'s bitmap: a bit per hash


def tail_hash(tail: bytes) -> int:
    """The hash of a ``PROBE_TAIL``-byte tail the C probe computes (``_scan.c``:
    ``tail_hash``): its bit in ``probe``'s bitmap."""
    return (int.from_bytes(tail, "little") * PROBE_HASH_MUL & 0xFFFFFFFF) >> (
        32 - PROBE_HASH_BITS)


def probe(table: Buffer, bitmap: bytes, tails: dict[bytes, tuple[bytes, ...]]) -> bool:
    """Whether some name of ``tails`` (its last ``PROBE_TAIL`` bytes -> the names ending in them)
    occurs in ``table`` followed by a NUL. ``bitmap`` is the C loop's pre-filter: not needed.

    A name followed by a NUL is the end of one NUL-terminated piece of the table (string
    tables share tails: ``stat`` may be the end of ``__xstat``), so each piece's last bytes
    are looked up; the bytes after the last NUL end no name.
    """
    pieces = bytes(table).split(b"\0")[:-1]
    for piece in pieces:
        names = tails.get(piece[-PROBE_TAIL:])
        if names is not None and any(piece.endswith(n) for n in names):
            return True
    return False


def occurs(table: Buffer, needles: tuple[bytes, ...]) -> int:
    """Bit ``i`` set when ``needles[i]`` occurs in ``table``."""
    data = bytes(table)
    return sum(1 << i for i, needle in enumerate(needles) if needle in data)


_SH_TYPE = {True: struct.Struct("<I"), False: struct.Struct(">I")}


def first_type(data: Buffer, shoff: int, count: int, entsize: int, little: bool,
               want: int) -> int:
    """The index of the first section header whose ``sh_type`` (the u32 at byte 4 of every
    header, both ELF classes) is ``want``, or -1; the whole table must lie inside ``data``.
    A count of 0 is no table, wherever it would be."""
    if count == 0:
        return -1
    if shoff < 0 or count < 0 or entsize < 8 or shoff + count * entsize > len(data):
        raise ValueError("section header table outside the data")
    u32 = _SH_TYPE[little]
    for i in range(count):
        if u32.unpack_from(data, shoff + i * entsize + 4)[0] == want:
            return i
    return -1



def named(headers: Buffer, count: int, entsize: int, little: bool, names: Buffer,
          name: bytes) -> list[int]:
    """The index of every section header whose ``sh_name`` (the u32 at byte 0 of every
    header, both classes) is an offset of ``names`` where ``name`` (with its NUL) begins:
    the offsets where it occurs, then the headers that point at one of them. The whole header
    table must lie inside ``headers``, and ``entsize`` be a multiple of 4."""
    if count == 0:
        return []
    if count < 0 or entsize < 8 or entsize % 4 or count * entsize > len(headers):
        raise ValueError("section header table outside the data")
    table, at, offsets = bytes(names), -1, set()
    while name and (at := table.find(name, at + 1)) >= 0:
        offsets.add(at)
    sh_name = struct.Struct(("<" if little else ">") + f"I{entsize - 4}x")
    return [i for i, (off,) in enumerate(sh_name.iter_unpack(headers[: count * entsize]))
            if off in offsets] if offsets else []

_SYM = {  # (is64, little) -> (st_name, st_info, st_other, st_shndx)
    (True, True): struct.Struct("<IBBH16x"),
    (True, False): struct.Struct(">IBBH16x"),
    (False, True): struct.Struct("<I8xBBH"),
    (False, False): struct.Struct(">I8xBBH"),
}
_GLOBAL_BINDS = (1, 2, 10)  # STB_GLOBAL, STB_WEAK, STB_GNU_UNIQUE
_NOT_SYMBOLS = (3, 4)  # STT_SECTION, STT_FILE
_HIDDEN = (1, 2)  # STV_INTERNAL, STV_HIDDEN


def object_symbols(symtab: Buffer, strtab: Buffer, is64: bool, little: bool
                   ) -> tuple[list[str], list[str], list[str], set[str]]:
    """An object's global symbols: (defined, undefined, exports, weak).

    Global: global, weak or GNU-unique binding, not a section or file symbol. Defined when
    ``st_shndx`` is not 0; exports are the defined ones neither hidden nor internal; weak the
    weak and GNU-unique definitions ("weak" in ``Symbols`` means "does not clash": the linker
    merges GNU-unique ones like weak ones). Empty names are left out everywhere.
    """
    sym = _SYM[(is64, little)]
    raw = bytes(symtab)
    raw = raw[: len(raw) - len(raw) % sym.size]
    names = bytes(strtab)
    defined: list[str] = []
    undefined: list[str] = []
    exports: list[str] = []
    weak: set[str] = set()
    for st_name, info, other, shndx in sym.iter_unpack(raw):
        bind, kind = info >> 4, info & 0xF
        if bind not in _GLOBAL_BINDS or kind in _NOT_SYMBOLS:
            continue
        name = cstring_at(names, st_name)
        if not name:
            continue
        if shndx == 0:
            undefined.append(name)
            continue
        defined.append(name)
        if other & 3 not in _HIDDEN:
            exports.append(name)
        if bind != 1:
            weak.add(name)
    return defined, undefined, exports, weak


def fill_demangled(cache: dict[str, str | None], names: list[str], demangler: int,
                   limit: int) -> None:
    """``cache[name]`` = ``demangle.demangle_once(name)`` for every name it lacks; emptied
    before it would grow past ``limit``. ``demangler`` is the C loop's function address."""
    for name in names:
        if name not in cache:
            if len(cache) >= limit:
                cache.clear()
            cache[name] = demangle_once(name)


def count_byte(buf: Buffer, byte: int, start: int) -> int:
    """How many times ``byte`` occurs in ``buf[start:]``."""
    return bytes(buf[max(0, start):]).count(bytes([byte]))


def dangling(offsets: Sequence[int], heads: set[int]) -> int:
    """How many distinct values of ``offsets`` are not in ``heads``."""
    return len(set(offsets) - heads)


# the value-type tables of the wasm loops (wasm_code.type_tables)
TypeTables = tuple[bytes, bytes, tuple[int, int, int, int, int]]


def wasm_deep_scan(buf: Buffer, bodies: list[tuple[int, int]],
                   single: tuple[bytes, bytes, bytes], pages: tuple[tuple[bytes, bytes], ...],
                   types: TypeTables, /) -> tuple[int, ...] | int | None:
    """No fast answer: ``wasm_code.decode_bodies_py`` is the reference."""
    return None


def wasm_symbols(buf: Buffer, start: int, end: int,
                 imports: tuple[list[str], list[str], list[str], list[str]], /
                 ) -> WasmSymbols | None:
    """No fast answer: ``None`` sends ``wasm._linked_symbols`` to ``wasm.parse_symbols``, the
    reference the C loop is held to."""
    return None


def wasm_sections(buf: Buffer, order: bytes, names: tuple[str, ...], /
                  ) -> list[tuple[int, str, int, int]] | None:
    """No fast answer: ``wasm._sections_py`` is the reference."""
    return None


def wasm_data(buf: Buffer, start: int, end: int, /) -> tuple[int, int] | None:
    """No fast answer: ``wasm._parse_data`` is the reference."""
    return None


def wasm_locals(buf: Buffer, start: int, end: int, /
                ) -> tuple[int, int, int, list[tuple[int, int]]] | None:
    """No fast answer: ``wasm_code.scan_locals_py`` is the reference."""
    return None


def wasm_imports(buf: Buffer, start: int, end: int, types: TypeTables, /
                 ) -> list[tuple[Any, ...]] | None:
    """No fast answer: ``wasm._parse_imports`` is the reference."""
    return None


def wasm_types(buf: Buffer, start: int, end: int, types: TypeTables, /
               ) -> tuple[int, int, int, int, int, int, int, int, tuple[int, ...]] | None:
    """No fast answer: ``wasm.parse_types`` is the reference."""
    return None
