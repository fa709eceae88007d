# Types of the C extension (src/prebake/inspect/_scan.c).
from collections.abc import Sequence
from typing import Any

from prebake.inspect.binreader import Buffer

# wasm_symbols' answer: (defined, undefined, exports, weak, every undefined name, every name)
WasmSymbols = tuple[list[str], list[str], list[str], set[str], list[str], set[str]]

# the probe's constants as the module was built with them (_scan_consts.h)
PROBE_TAIL: int
PROBE_HASH_MUL: int
PROBE_HASH_BITS: int
PROBE_BITMAP_BYTES: int

def probe(table: Buffer, bitmap: bytes, tails: dict[bytes, tuple[bytes, ...]], /) -> bool: ...
def occurs(table: Buffer, needles: tuple[bytes, ...], /) -> int: ...
def first_type(data: Buffer, shoff: int, count: int, entsize: int, little: bool, want: int,
               /) -> int: ...
def object_symbols(
    symtab: Buffer, strtab: Buffer, is64: bool, little: bool, /
) -> tuple[list[str], list[str], list[str], set[str]]: ...
def fill_demangled(cache: dict[str, str | None], names: list[str], demangler: int, limit: int,
                   /) -> None: ...
def count_byte(buf: Buffer, byte: int, start: int, /) -> int: ...
def dangling(offsets: Sequence[int], heads: set[int], /) -> int: ...
# the value-type tables of the wasm loops (wasm_code.type_tables)
TypeTables = tuple[bytes, bytes, tuple[int, int, int, int, int]]

def wasm_deep_scan(buf: Buffer, bodies: list[tuple[int, int]],
                   single: tuple[bytes, bytes, bytes], pages: tuple[tuple[bytes, bytes], ...],
                   types: TypeTables, /) -> tuple[int, ...] | int | None: ...
def wasm_symbols(buf: Buffer, start: int, end: int,
                 imports: tuple[list[str], list[str], list[str], list[str]], /
                 ) -> WasmSymbols | None: ...
def wasm_locals(buf: Buffer, start: int, end: int, /
                ) -> tuple[int, int, int, list[tuple[int, int]]] | None: ...
def wasm_imports(buf: Buffer, start: int, end: int, types: TypeTables, /
                 ) -> list[tuple[Any, ...]] | None: ...
def wasm_types(buf: Buffer, start: int, end: int, types: TypeTables, /
               ) -> tuple[int, int, int, int, int, int, int, int, tuple[int, ...]] | None: ...
