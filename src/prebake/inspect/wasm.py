"""WebAssembly modules and relocatable objects → ``Facts`` (docs/binary-formats.md §3).

Specs: the WebAssembly 3.0 core binary format (every section: rec groups of function, struct
and array types, imports, tables, memories, globals, exports, element and data segments with
their constant expressions, tags), LLVM's ``tool-conventions/Linking.md`` (the ``linking``
custom section of relocatable objects), ``tool-conventions/ProducersSection.md`` and the
``target_features`` section. Every read is bounded by its section (and the section by the
file) through ``binreader.Reader``; a bad length raises ``Truncated``, which the frame turns
into a one-line ``FormatError`` naming the file; a construct after 3.0 in a section read only
for features marks the feature list incomplete instead (``Module.unread``).

Objects and modules alike: every instruction is decoded (``wasm_code.decode_bodies``) and every
value type read, which give the EH encoding (legacy, exnref, both, none), ``simd128``,
``relaxed_simd`` and the feature list (``features_of``: what the code and the structure need,
through ``wasm_code.FAMILY_FEATURES``); an object's ``target_features`` is evidence beside the
code, and adds what the compiler enabled. Relocatable objects (they carry a ``linking``
section) get symbols from its symbol table. Linked modules (Emscripten output has no custom
sections at all) get threads from shared memory, EH from tags/imports/the code/the JS glue,
and Asyncify from the runtime's byte patterns.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections import Counter
from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import PurePath
from typing import Any

from prebake.inspect import emscripten, hotloops, magic, producer, wasm_code
from prebake.inspect.binreader import Buffer, Reader, Truncated
from prebake.inspect.dispatch import own_file
from prebake.inspect.facts import Facts, Symbols
from prebake.inspect.reader import ParseOptions

MAGIC = magic.WASM
VERSION_1 = b"\x01\x00\x00\x00"


class Sec(IntEnum):
    CUSTOM = 0
    TYPE = 1
    IMPORT = 2
    FUNCTION = 3
    TABLE = 4
    MEMORY = 5
    GLOBAL = 6
    EXPORT = 7
    START = 8
    ELEMENT = 9
    CODE = 10
    DATA = 11
    DATACOUNT = 12
    TAG = 13


# The order of the known sections (§5.5.2): tag between memory and global, data count before
# code; each at most once. Custom sections may come anywhere.
_ORDER = (Sec.TYPE, Sec.IMPORT, Sec.FUNCTION, Sec.TABLE, Sec.MEMORY, Sec.TAG, Sec.GLOBAL,
          Sec.EXPORT, Sec.START, Sec.ELEMENT, Sec.DATACOUNT, Sec.CODE, Sec.DATA)

# Section names as wasm-objdump prints them, so the two listings compare directly.
SECTION_NAMES: dict[int, str] = {
    Sec.TYPE: "Type", Sec.IMPORT: "Import", Sec.FUNCTION: "Function", Sec.TABLE: "Table",
    Sec.MEMORY: "Memory", Sec.GLOBAL: "Global", Sec.EXPORT: "Export", Sec.START: "Start",
    Sec.ELEMENT: "Elem", Sec.CODE: "Code", Sec.DATA: "Data", Sec.DATACOUNT: "DataCount",
    Sec.TAG: "Tag",
}


class Ext(IntEnum):
    """Import/export kinds."""

    FUNC = 0
    TABLE = 1
    MEMORY = 2
    GLOBAL = 3
    TAG = 4


class SymKind(IntEnum):
    FUNCTION = 0
    DATA = 1
    GLOBAL = 2
    SECTION = 3
    TAG = 4
    TABLE = 5


class SymFlag(IntEnum):
    WEAK = 0x01
    LOCAL = 0x02
    HIDDEN = 0x04
    UNDEFINED = 0x10
    EXPORTED = 0x20
    EXPLICIT_NAME = 0x40
    NO_STRIP = 0x80
    TLS = 0x100


LINKING_VERSION = 2
SYMBOL_TABLE = 8

# C++ EH markers of Emscripten's JS-based ("legacy") exceptions (§3.4). invoke_*, __THREW__ and
# getTempRet0 are *not* among them: JS setjmp/longjmp produces those too.
_LEGACY_EH = re.compile(r"^(__resumeException|__cxa_find_matching_catch_\d+|llvm_eh_typeid_for)$")
_INVOKE = re.compile(r"^invoke_\w+$")
_WASM_EH_SYMBOLS = ("__cpp_exception", "__wasm_lpad_context")
# Names only an Emscripten-targeted object or module imports (its JS runtime provides them).
_EMSCRIPTEN_NAMES = re.compile(
    r"^(emscripten_\w+|_emscripten_\w+|__syscall_\w+|invoke_\w+|__cxa_find_matching_catch_\d+"
    r"|__resumeException|getTempRet0|setTempRet0|saveSetjmp|testSetjmp|_embind_\w+)$"
)
_DYLINK = ("dylink.0", "dylink")
_WASI_MODULES = ("wasi_snapshot_preview1", "wasi_unstable")
_READABLE_MODULES = ("env", "GOT.mem", "GOT.func", *_WASI_MODULES)

# Asyncify's runtime functions, byte for byte (§3.7): set state (1 unwind / 2 rewind), store
# the data pointer, trap if data.stack_ptr > data.stack_end. Global indices are LEBs.
_LEB = rb"((?:[\x80-\xff]{0,4})[\x00-\x7f])"
_ASYNCIFY_START = re.compile(
    rb"\x00\x41([\x01\x02])\x24" + _LEB + rb"\x20\x00\x24" + _LEB
    + rb"\x23\3\x28\x02\x00\x23\3\x28\x02\x04\x4b\x04\x40\x00\x0b\x0b"
)
_ASYNCIFY_MIN, _ASYNCIFY_MAX = 21, 25 + 16  # stop..start bodies, 1- to 5-byte global LEBs
_STOP_TEMPLATE = b"\x00\x41\x00\x24%s\x23%s\x28\x02\x00\x23%s\x28\x02\x04\x4b\x04\x40\x00\x0b\x0b"


@dataclass
class Import:
    """One import of a wasm module, with the memory and global flags the checks read, and the
    families its value type names (a global's, a table's elements; ``wasm_code.BIT`` masks)."""

    module: str
    field: str
    kind: int
    shared: bool = False
    memory64: bool = False
    mutable: bool = False
    limits: tuple[int, int | None] | None = None
    types: int = 0
    page_size: bool = False  # a memory of a custom page size


@dataclass
class Module:
    """The parsed container: what later rules read."""

    sections: list[tuple[int, str, int, int]] = field(default_factory=list)  # id, name, start, end
    imports: list[Import] = field(default_factory=list)
    exports: list[tuple[str, int, int]] = field(default_factory=list)  # name, kind, index
    memories: list[dict[str, Any]] = field(default_factory=list)
    functions: int = 0
    globals: int = 0
    tables: int = 0
    tags: int = 0
    types: int = 0
    gc_types: bool = False
    features: dict[str, str] | None = None  # name -> prefix ("+", "-", "=")
    producers: dict[str, list[str]] = field(default_factory=dict)
    producer_entries: list[tuple[str, str, str]] = field(default_factory=list)  # field, name, ver
    linking: tuple[int, int] | None = None  # payload bounds of the linking section
    code: tuple[int, int] | None = None
    # Families (``wasm_code.FAMILIES``) the module names outside its code section: value types
    # of types, imports, globals, tables and element segments, and the instructions of its
    # constant expressions (global, table, element and data initializers).
    uses: Counter[str] = field(default_factory=Counter)
    # Features the module's structure needs, each with why (shared memory, 64-bit limits,
    # tags, passive segments, GC type definitions, ...): the rest come from ``uses``.
    needs: dict[str, list[str]] = field(default_factory=dict)
    # What could not be read as WebAssembly 3.0 (a type, limits or segment of a later
    # proposal): the features are then not the whole list, and this says why.
    unread: list[str] = field(default_factory=list)
    exnref_at: Counter[str] = field(default_factory=Counter)  # where ``uses`` saw exnref
    global_mutable: list[bool] = field(default_factory=list)  # imported globals first
    imported_globals: int = 0

    # Needs of a linked module only: a relocatable object imports ``__stack_pointer`` as a
    # mutable global and LLVM writes a data count section into it whatever its features,
    # and wasm-ld resolves both (a module it links needs neither unless its features say so).
    module_needs: dict[str, list[str]] = field(default_factory=dict)

    def need(self, feature: str, why: str, module_only: bool = False) -> None:
        reasons = (self.module_needs if module_only else self.needs).setdefault(feature, [])
        if why not in reasons:
            reasons.append(why)

    @functools.cached_property
    def _by_kind(self) -> dict[int, list[Import]]:
        """The imports grouped by kind, in one pass: the rules ask for a kind several times per
        object, and only once ``parse_container`` has read every import (a tenth of
        ``inspect --json`` over the flagship's 713-member archive went to re-filtering)."""
        out: dict[int, list[Import]] = {}
        for i in self.imports:
            out.setdefault(i.kind, []).append(i)
        return out

    def imports_of(self, kind: int) -> list[Import]:
        return self._by_kind.get(kind, [])


class Unsupported(ValueError):
    """A construct outside WebAssembly 3.0 in a section the reader only needs for features:
    the section's rest is skipped and the feature list marked incomplete (``Module.unread``)."""


class _Cur:
    """A cursor bounded by ``end`` over the reader's buffer (LEBs, names, bytes)."""

    __slots__ = ("buf", "end", "pos")

    def __init__(self, r: Reader, pos: int, end: int) -> None:
        r.check(pos, end - pos, "section")
        self.buf = r.buf
        self.pos = pos
        self.end = end

    def u8(self) -> int:
        if self.pos >= self.end:
            raise Truncated(f"byte at offset {self.pos} runs past its section end {self.end}")
        b = int(self.buf[self.pos])
        self.pos += 1
        return b

    def uleb(self) -> int:
        v, self.pos = wasm_code.uleb(self.buf, self.pos, self.end)
        return v

    def count(self, min_item_bytes: int = 1) -> int:
        """A vector length, refused when its items cannot fit in what is left."""
        n = self.uleb()
        if n * min_item_bytes > self.end - self.pos:
            raise Truncated(f"vector of {n} items at offset {self.pos} cannot fit its section")
        return n

    def bytes(self, n: int) -> bytes:
        if n < 0 or self.pos + n > self.end:
            raise Truncated(f"{n} bytes at offset {self.pos} run past the section end {self.end}")
        out = bytes(self.buf[self.pos : self.pos + n])
        self.pos += n
        return out

    def skip(self, n: int) -> None:
        if n < 0 or self.pos + n > self.end:
            raise Truncated(f"{n} bytes at offset {self.pos} run past the section end {self.end}")
        self.pos += n

    def name(self) -> str:
        return self.bytes(self.uleb()).decode("utf-8", "replace")

    def skip_leb(self) -> None:
        self.pos = wasm_code.skip_leb(self.buf, self.pos, self.end)

    def valtype(self, packed: bool = False) -> int:
        """A value type (``packed``: a field's storage type): the families it names."""
        try:
            self.pos, mask = wasm_code.valtype(self.buf, self.pos, self.end, packed)
        except wasm_code.Bounds as exc:
            raise Unsupported(str(exc)) from None
        return mask

    def mutability(self) -> bool:
        at = self.pos
        b = self.u8()
        if b > 1:
            raise Unsupported(f"global mutability 0x{b:02x} at offset {at} (shared globals, "
                              "after WebAssembly 3.0)")
        return b == 1

    def reftype(self) -> int:
        """A table's element type: the families it names, none for ``funcref`` (a table of
        functions needs no proposal)."""
        start = self.pos
        mask = self.valtype()
        raw = bytes(self.buf[start : self.pos])
        if raw in (b"\x70", b"\x63\x70"):
            return 0
        if not mask & wasm_code.BIT["reftype"]:
            raise Unsupported(f"table element type {raw.hex()} at offset {start} is no reference")
        return mask

    def limits(self, table: bool = False) -> tuple[int, int, int | None]:
        """Limits: flags (bit 0 a maximum, bit 1 shared, bit 2 64-bit, bit 3 a custom page
        size after the maximum: the custom-page-sizes proposal), minimum, maximum."""
        at = self.pos
        flags = self.u8()
        if flags > 15 or (table and flags & 10):
            raise Unsupported(f"limits flags 0x{flags:02x} at offset {at} (shared tables or a "
                              "later proposal, after WebAssembly 3.0)")
        lo = self.uleb()
        hi = self.uleb() if flags & 0x01 else None
        if flags & 8:
            self.uleb()  # the page size's log2
        return flags, lo, hi

    def expr(self, m: Module, globals_read: list[int] | None = None) -> set[int]:
        """A constant expression, decoded with the opcode table: its families counted in
        ``m.uses``; the single-byte opcodes it holds (and, into ``globals_read``, the indices
        ``global.get`` reads)."""
        ops: set[int] = set()
        try:
            self.pos = wasm_code.decode_expr(self.buf, self.pos, self.end, m.uses, ops,
                                             globals_read)
        except wasm_code.Bounds as exc:
            raise Unsupported(f"constant expression: {exc}") from None
        return ops


# --- container ---------------------------------------------------------------------------------


# For the C walk: each section id's rank in ``_ORDER`` (255: unknown), and its name.
_RANKS = bytes(_ORDER.index(Sec(i)) if i in SECTION_NAMES else 255 for i in range(256))
_NAMES = tuple(SECTION_NAMES.get(i, "") for i in range(Sec.TAG + 1))


def _sections(r: Reader) -> list[tuple[int, str, int, int]]:
    """Every section: (id, name, payload start, end); a custom section's name is read, its
    payload starts after it. In C (``_scan.wasm_sections``: a tenth of the time of an object
    of a big archive went here) when it reads them all, else ``_sections_py``, which says
    what is wrong."""
    if r.bytes(0, 4, "magic") != MAGIC:
        raise Truncated("not a WebAssembly file")
    version = r.bytes(4, 4, "version")
    if version != VERSION_1:
        raise ValueError(f"unsupported wasm version {version.hex(' ')} (a component?)")
    fast = hotloops.scan.wasm_sections(r.buf, _RANKS, _NAMES)
    return fast if fast is not None else _sections_py(r)


def _sections_py(r: Reader) -> list[tuple[int, str, int, int]]:
    """``_sections`` in Python after the header: the reference the C walk is held to."""
    out: list[tuple[int, str, int, int]] = []
    pos = 8
    last = -1
    while pos < r.size:
        sid = r.u8(pos)
        size, start = wasm_code.uleb(r.buf, pos + 1, r.size)
        end = start + size
        r.check(start, size, f"section {sid}")
        if sid == Sec.CUSTOM:
            c = _Cur(r, start, end)
            name = c.name()
            out.append((sid, name, c.pos, end))
        elif sid <= Sec.TAG:
            rank = _ORDER.index(sid)
            if rank <= last:
                raise ValueError(f"section {SECTION_NAMES[sid]} at offset {pos} is out of order "
                                 "or repeated")
            last = rank
            out.append((sid, SECTION_NAMES[sid], start, end))
        else:
            raise ValueError(f"unknown section id {sid} at offset {pos}")
        pos = end
    return out


@dataclass
class TypeScan:
    """The type section as the facts need it: every type position's value types counted by
    family (``uses``), the v128 and exnref ones apart, function types with several results,
    and the GC definitions (rec groups, subtypes, structs, arrays)."""

    types: int = 0
    v128: int = 0
    exnref: int = 0
    multivalue: int = 0
    recs: int = 0
    subtypes: int = 0
    structs: int = 0
    arrays: int = 0
    uses: Counter[str] = field(default_factory=Counter)


def _type_slot(t: TypeScan, c: _Cur, packed: bool = False) -> None:
    start = c.pos
    mask = c.valtype(packed)
    wasm_code.count_mask(t.uses, mask)
    if c.buf[start] == wasm_code.V128:
        t.v128 += 1
    if mask & wasm_code.BIT["exnref_type"]:
        t.exnref += 1


def _subtype(t: TypeScan, c: _Cur, form: int) -> None:
    at = c.pos - 1
    if form in (0x50, 0x4F):  # sub / sub final, with their supertypes
        supers = c.count()
        for _ in range(supers):
            c.skip_leb()
        if form == 0x50 or supers:  # a final type without supertypes is a plain type
            t.subtypes += 1
        at = c.pos
        form = c.u8()
    t.types += 1
    if form == 0x60:  # func: parameters, results
        for part in range(2):
            n = c.count()
            for _ in range(n):
                _type_slot(t, c)
            if part and n > 1:
                t.multivalue += 1
    elif form == 0x5F:  # struct: fields
        t.structs += 1
        for _ in range(c.count(2)):
            _type_slot(t, c, packed=True)
            c.u8()  # mutability
    elif form == 0x5E:  # array: one field
        t.arrays += 1
        _type_slot(t, c, packed=True)
        c.u8()
    else:
        raise Unsupported(f"type form 0x{form:02x} at offset {at} (not a WebAssembly 3.0 "
                          "function, struct or array type)")


def parse_types(c: _Cur) -> TypeScan:
    """The type section (§5.5.4): rec groups of subtypes of function, struct and array
    types, every value type read. The reference ``_scan.wasm_types`` is held to."""
    t = TypeScan()
    for _ in range(c.count()):
        form = c.u8()
        if form == 0x4E:  # rec: a group of subtypes
            t.recs += 1
            for _ in range(c.count()):
                _subtype(t, c, c.u8())
        else:
            _subtype(t, c, form)
    return t


def _apply_types(m: Module, t: TypeScan) -> None:
    m.types += t.types
    m.uses.update(t.uses)
    if t.exnref:
        m.exnref_at["types"] += t.exnref
    gc = [f"{n} {what}" for n, what in ((t.recs, "rec groups"), (t.subtypes, "subtypes"),
                                         (t.structs, "struct types"), (t.arrays, "array types"))
          if n]
    if gc:
        m.gc_types = True
        m.need("gc", ", ".join(gc))
    if t.multivalue:
        m.need("multivalue", f"{t.multivalue} function types with several results")


def _import_type(c: _Cur, imp: Import) -> None:
    """What an import imports (§5.5.5): a function's type index, a table's element type and
    limits, a memory's limits, a global's type and mutability, a tag's attribute and type."""
    if imp.kind == Ext.FUNC:
        c.skip_leb()
    elif imp.kind == Ext.TABLE:
        imp.types = c.reftype()
        flags, lo, hi = c.limits(table=True)
        imp.memory64, imp.limits = bool(flags & 4), (lo, hi)
    elif imp.kind == Ext.MEMORY:
        flags, lo, hi = c.limits()
        imp.shared, imp.memory64, imp.limits = bool(flags & 2), bool(flags & 4), (lo, hi)
        imp.page_size = flags & 8 != 0
    elif imp.kind == Ext.GLOBAL:
        imp.types = c.valtype()
        imp.mutable = c.mutability()
    elif imp.kind == Ext.TAG:
        c.u8()
        c.skip_leb()
    else:
        raise ValueError(f"unknown import kind {imp.kind} for {imp.module}.{imp.field}")


def _parse_imports(m: Module, c: _Cur) -> None:
    """Each import, or a group of them in the compact encoding (the compact-imports proposal,
    on in wasm-tools' defaults): a module name and an empty name, then 0x7F and (name, type)
    pairs, or 0x7E, one type and the names that share it."""
    for _ in range(c.count(4)):
        module, name = c.name(), c.name()
        form = c.buf[c.pos] if not name and c.pos < c.end else None
        if form == 0x7F:
            c.pos += 1
            m.need("compact-imports", f"compact imports from {module}")
            for _ in range(c.count(2)):
                imp = Import(module, c.name(), c.u8())
                _import_type(c, imp)
                m.imports.append(imp)
        elif form == 0x7E:
            c.pos += 1
            m.need("compact-imports", f"compact imports from {module}")
            shared = Import(module, "", c.u8())
            _import_type(c, shared)
            for _ in range(c.count()):
                m.imports.append(dataclasses.replace(shared, field=c.name()))
        else:
            imp = Import(module, name, c.u8())
            _import_type(c, imp)
            m.imports.append(imp)


def _uses(m: Module, mask: int, where: str) -> None:
    """Count the families of a value type read at ``where`` (exnref's place kept apart)."""
    wasm_code.count_mask(m.uses, mask)
    if mask & wasm_code.BIT["exnref_type"]:
        m.exnref_at[where] += 1


def _apply_imports(m: Module) -> None:
    """What the imports need: their value types, mutable globals, tags, a second table (a
    function import needs nothing: most of an object's thousands of imports)."""
    mutable: list[str] = []
    for imp in (*m.imports_of(Ext.GLOBAL), *m.imports_of(Ext.TAG), *m.imports_of(Ext.MEMORY),
                *m.imports_of(Ext.TABLE)):
        kind = imp.kind
        if kind == Ext.GLOBAL:
            _uses(m, imp.types, "imported globals")
            m.imported_globals += 1
            m.global_mutable.append(imp.mutable)
            if imp.mutable:
                mutable.append(f"{imp.module}.{imp.field}")
        elif kind == Ext.TAG:
            m.need("exception-handling", f"imports tag {imp.module}.{imp.field}")
        elif kind == Ext.MEMORY and imp.page_size:
            m.need("custom-page-sizes", f"memory {imp.module}.{imp.field} has a custom page "
                   "size")
        elif kind == Ext.TABLE:
            _uses(m, imp.types, "imported tables")
            m.tables += 1
            if imp.memory64:
                m.need("memory64", f"table {imp.module}.{imp.field} has 64-bit limits")
    if mutable:
        m.need("mutable-globals", f"imports mutable globals {_list(mutable, 3)}",
               module_only=True)


def _parse_tables(m: Module, c: _Cur) -> None:
    for _ in range(c.count(2)):
        init = c.buf[c.pos] == 0x40 if c.pos < c.end else False
        if init:  # 0x40 0x00 tabletype expr: a table with an initializer (3.0)
            c.pos += 1
            if c.u8() != 0:
                raise Unsupported(f"table at offset {c.pos - 2} with a reserved byte not 0")
            m.need("function-references", "a table with an initializer expression")
        _uses(m, c.reftype(), "tables")
        flags, _, _ = c.limits(table=True)
        if flags & 4:
            m.need("memory64", "a table with 64-bit limits")
        if init:
            _const(m, c)
        m.tables += 1


def _parse_memories(m: Module, c: _Cur) -> None:
    for i in range(c.count(2)):
        flags, lo, hi = c.limits()
        m.memories.append({"min": lo, "max": hi, "shared": bool(flags & 2),
                           "memory64": bool(flags & 4), "imported": None})
        if flags & 8:
            m.need("custom-page-sizes", f"memory {i} has a custom page size")


def _const(m: Module, c: _Cur) -> None:
    """A constant expression: what it needs beside its instructions' families (arithmetic:
    extended-const; ``global.get`` of a global the module defines: GC, §3.4.13)."""
    buf, pos = c.buf, c.pos
    if pos + 1 < c.end and buf[pos] in (0x41, 0x42):  # i32/i64.const N end: most offsets
        end = wasm_code.skip_leb(buf, pos + 1, c.end)
        if end < c.end and buf[end] == 0x0B:
            c.pos = end + 1
            return
    read: list[int] = []
    before = m.uses["exnref_type"]
    ops = c.expr(m, read)
    if m.uses["exnref_type"] > before:
        m.exnref_at["constant expressions"] += m.uses["exnref_type"] - before
    arith = ops & wasm_code.EXTENDED_CONST_OPS
    if arith:
        m.need("extended-const", "arithmetic in a constant expression")
    if any(i >= m.imported_globals for i in read):
        m.need("gc", "a constant expression reads a global the module defines")


def _parse_globals(m: Module, c: _Cur) -> None:
    n = c.count(3)
    m.globals = n
    for _ in range(n):
        _uses(m, c.valtype(), "globals")
        m.global_mutable.append(c.mutability())
        _const(m, c)


def _parse_exports(m: Module, c: _Cur) -> None:
    for _ in range(c.count(3)):
        m.exports.append((c.name(), c.u8(), c.uleb()))


def _apply_exports(m: Module) -> None:
    for name, kind, index in m.exports:
        if kind == Ext.GLOBAL and index < len(m.global_mutable) and m.global_mutable[index]:
            m.need("mutable-globals", f"exports mutable global {name}", module_only=True)


def _parse_elements(m: Module, c: _Cur) -> None:
    """Element segments (§5.5.12): flags 0..7 say active, passive or declared, an explicit
    table, and function indices or expressions."""
    for _ in range(c.count(2)):
        at = c.pos
        flags = c.uleb()
        if flags > 7:
            raise Unsupported(f"element segment flags {flags} at offset {at}")
        if flags & 1:
            m.need("bulk-memory", "passive or declared element segments")
        elif flags & 2:
            c.skip_leb()  # the table
        if not flags & 1:
            _const(m, c)  # the offset
        if flags & 4:  # expressions of a reference type (the type given unless flags is 4)
            if flags != 4:
                _uses(m, c.valtype(), "element segments")
            m.uses["reftype"] += 1  # the validator checks the element type (funcref too)
            for _ in range(c.count()):
                _const(m, c)
        else:  # function indices (after an element kind, 0x00, unless flags is 0)
            if flags:
                c.u8()
            for _ in range(c.count()):
                c.skip_leb()


def _data(m: Module, c: _Cur) -> None:
    """The data section in C (``_scan.wasm_data``) when every offset is a plain constant
    (an object holds hundreds of segments: a tenth of a big archive's reading went here in
    Python), else ``_parse_data``, which decodes the others and says what is wrong."""
    fast = hotloops.scan.wasm_data(c.buf, c.pos, c.end)
    if fast is None:
        _parse_data(m, c)
        return
    c.pos = c.end
    if fast[1]:
        m.need("bulk-memory", "passive data segments")


def _parse_data(m: Module, c: _Cur) -> None:
    """Data segments: 0 active in memory 0, 1 passive (bulk memory), 2 active in memory x."""
    for _ in range(c.count()):
        at = c.pos
        flags = c.uleb()
        if flags > 2:
            raise Unsupported(f"data segment flags {flags} at offset {at}")
        if flags == 1:
            m.need("bulk-memory", "passive data segments")
        else:
            if flags == 2:
                c.skip_leb()
            _const(m, c)
        c.skip(c.uleb())


def _parse_tags(m: Module, c: _Cur) -> None:
    m.tags = c.count()
    m.need("exception-handling", "a tag section")


_CUSTOM_READ = frozenset({"target_features", "producers", "linking"})
# sections read only for features: what they cannot read as 3.0 marks the list incomplete
_FEATURE_SECTIONS = {Sec.TABLE: _parse_tables, Sec.GLOBAL: _parse_globals,
                     Sec.ELEMENT: _parse_elements, Sec.DATA: _data}


def parse_container(r: Reader) -> Module:
    """Sections, imports, exports, memories, counts, custom sections, every type and constant
    expression: all but the code."""
    m = Module(sections=_sections(r))
    for sid, name, start, end in m.sections:
        if sid == Sec.CUSTOM and name not in _CUSTOM_READ:
            continue  # relocations, names, debug info: nothing the facts read
        c = _Cur(r, start, end)
        if sid == Sec.TYPE:
            _types(m, r, c, start, end)
        elif sid == Sec.IMPORT:
            fast = hotloops.scan.wasm_imports(r.buf, start, end, wasm_code.type_tables())
            if fast is None:  # the reference reads it again and says what is wrong
                try:
                    _parse_imports(m, c)
                except Unsupported as exc:
                    raise ValueError(f"import section: {exc}") from None
            else:
                m.imports.extend(Import(*t) for t in fast)
            _apply_imports(m)
        elif sid == Sec.FUNCTION:
            m.functions = c.count()
        elif sid == Sec.TAG:
            _parse_tags(m, c)
        elif sid == Sec.MEMORY:
            try:
                _parse_memories(m, c)
            except Unsupported as exc:
                m.unread.append(f"memory section: {exc}")
        elif sid == Sec.EXPORT:
            _parse_exports(m, c)
            _apply_exports(m)
        elif sid == Sec.CODE:
            m.code = (start, end)
        elif sid == Sec.DATACOUNT:
            m.need("bulk-memory", "a data count section", module_only=True)
        elif sid in _FEATURE_SECTIONS:
            try:
                _FEATURE_SECTIONS[Sec(sid)](m, c)
            except Unsupported as exc:
                m.unread.append(f"{SECTION_NAMES[sid].lower()} section: {exc}")
            else:
                _exact(c, SECTION_NAMES[sid])
        elif sid == Sec.CUSTOM and name == "target_features":
            _parse_features(m, c)
        elif sid == Sec.CUSTOM and name == "producers":
            _parse_producers(m, c)
        elif sid == Sec.CUSTOM and name == "linking":
            m.linking = (start, end)
    for imp in m.imports_of(Ext.MEMORY):
        lo, hi = imp.limits or (0, None)
        m.memories.insert(0, {"min": lo, "max": hi, "shared": imp.shared,
                              "memory64": imp.memory64, "imported": f"{imp.module}.{imp.field}"})
    _memory_needs(m)
    return m


def _exact(c: _Cur, what: str) -> None:
    """A section read to its last byte (bytes after its items are a corrupt file, as
    wasm-tools says: "section size mismatch")."""
    if c.pos != c.end:
        raise Truncated(f"{what} section has {c.end - c.pos} bytes after its items "
                        f"(at offset {c.pos})")


def _types(m: Module, r: Reader, c: _Cur, start: int, end: int) -> None:
    """The type section in C (``_scan.wasm_types``) when it reads it whole, else
    ``parse_types``, which says what is wrong or what is not 3.0."""
    fast = hotloops.scan.wasm_types(r.buf, start, end, wasm_code.type_tables())
    if fast is not None:
        types, v128, exnref, multi, recs, subtypes, structs, arrays, counts = fast
        t = TypeScan(types, v128, exnref, multi, recs, subtypes, structs, arrays)
        t.uses.update({f: n for f, n in zip(wasm_code.FAMILIES, counts, strict=False) if n})
        _apply_types(m, t)
        return
    try:
        t = parse_types(c)
    except Unsupported as exc:
        m.unread.append(f"type section: {exc}")
        return
    _apply_types(m, t)


def _memory_needs(m: Module) -> None:
    for i, mem in enumerate(m.memories):
        where = mem["imported"] or f"memory {i}"
        if mem["shared"]:
            m.need("atomics", f"{where} is shared")
        if mem["memory64"]:
            m.need("memory64", f"{where} has 64-bit limits")
    if len(m.memories) > 1:
        m.need("multimemory", f"{len(m.memories)} memories")
    if m.tables > 1:
        m.need("reference-types", f"{m.tables} tables")


def _parse_features(m: Module, c: _Cur) -> None:
    m.features = {}
    for _ in range(c.count(2)):
        prefix = chr(c.u8())
        m.features[c.name()] = prefix


def _parse_producers(m: Module, c: _Cur) -> None:
    """field -> ["name version", ...] (ProducersSection.md); names of one byte's length read
    inline (every real one), others through the cursor."""
    buf, end = c.buf, c.end

    def name() -> str:
        pos = c.pos
        n = buf[pos] if pos < end else 0x80
        if n < 0x80 and pos + 1 + n <= end:
            c.pos = pos + 1 + n
            return bytes(buf[pos + 1 : pos + 1 + n]).decode("utf-8", "replace")
        return c.name()

    for _ in range(c.count(2)):
        field = name()
        vals = m.producers.setdefault(field, [])
        for _ in range(c.count(2)):
            tool, ver = name(), name()
            vals.append(f"{tool} {ver}".strip())
            m.producer_entries.append((field, tool, ver))


# --- relocatable objects: the linking section --------------------------------------------------


@dataclass
class Symbol:
    """One entry of a wasm object's ``linking`` symbol table."""

    kind: int
    flags: int
    name: str

    @property
    def undefined(self) -> bool:
        return bool(self.flags & SymFlag.UNDEFINED)


def parse_symbols(r: Reader, m: Module) -> list[Symbol] | None:
    """The SYMBOL_TABLE subsection (§3.2); ``None`` for an unknown linking version."""
    assert m.linking is not None
    c = _Cur(r, *m.linking)
    if c.uleb() != LINKING_VERSION:
        return None
    by_kind = {
        SymKind.FUNCTION: [i.field for i in m.imports_of(Ext.FUNC)],
        SymKind.GLOBAL: [i.field for i in m.imports_of(Ext.GLOBAL)],
        SymKind.TAG: [i.field for i in m.imports_of(Ext.TAG)],
        SymKind.TABLE: [i.field for i in m.imports_of(Ext.TABLE)],
    }
    out: list[Symbol] = []
    while c.pos < c.end:
        sub = c.u8()
        size = c.uleb()
        sc = _Cur(r, c.pos, c.pos + size) if c.pos + size <= c.end else None
        if sc is None:
            raise Truncated(f"linking subsection at offset {c.pos} (+{size}) runs past its section")
        c.pos += size
        if sub != SYMBOL_TABLE:
            continue
        for _ in range(sc.count(2)):
            kind, flags = sc.u8(), sc.uleb()
            if kind in by_kind:
                index = sc.uleb()
                undefined = bool(flags & SymFlag.UNDEFINED)
                if not undefined or flags & SymFlag.EXPLICIT_NAME:
                    name = sc.name()
                else:  # an import without an explicit name: the import's field name
                    names = by_kind[SymKind(kind)]
                    if index >= len(names):
                        raise ValueError(f"symbol refers to missing import {index} of kind {kind}")
                    name = names[index]
            elif kind == SymKind.DATA:
                name = sc.name()
                if not flags & SymFlag.UNDEFINED:
                    sc.skip_leb()
                    sc.skip_leb()
                    sc.skip_leb()
            elif kind == SymKind.SECTION:
                sc.skip_leb()
                continue
            else:
                raise ValueError(f"unknown symbol kind {kind} in the linking section")
            out.append(Symbol(kind, flags, name))
    return out


def _symbols_of_object(syms: list[Symbol]) -> Symbols:
    out = Symbols()
    for s in syms:
        if s.flags & SymFlag.LOCAL:
            continue
        if s.undefined:
            out.undefined.append(s.name)
            continue
        out.defined.append(s.name)
        if s.flags & SymFlag.WEAK:
            out.weak.add(s.name)
        if not s.flags & SymFlag.HIDDEN:
            out.exports.append(s.name)
    return out


@dataclass
class Linked:
    """An object's symbol table as its facts use it: ``Symbols`` (local symbols left out), and
    every undefined name and every name, local ones included (where EH markers are looked up)."""

    symbols: Symbols
    undefined: list[str]
    names: set[str]


def linked_symbols(r: Reader, m: Module) -> Linked | None:
    """``parse_symbols`` sorted into ``Linked``; ``None`` for an unknown linking version.

    The C loop (``_scan.wasm_symbols``, a flagship archive's 240 000 symbols in a few
    hundredths of a second) answers when it reads the table to its end; otherwise the Python
    reads it again, and raises what is wrong or says the version is unknown."""
    assert m.linking is not None
    start, end = m.linking
    f, g, t, tb = ([i.field for i in m.imports_of(k)]
                   for k in (Ext.FUNC, Ext.GLOBAL, Ext.TAG, Ext.TABLE))
    imports = (f, g, t, tb)
    fast = hotloops.scan.wasm_symbols(r.buf, start, end, imports)
    if fast is not None:
        defined, undefined, exports, weak, undefined_all, names = fast
        return Linked(Symbols(defined, undefined, exports, weak), undefined_all, names)
    syms = parse_symbols(r, m)
    if syms is None:
        return None
    return Linked(_symbols_of_object(syms), [s.name for s in syms if s.undefined],
                  {s.name for s in syms})


# --- the code, and what it and the structure need ----------------------------------------------


@dataclass
class Code:
    """The code section as the facts use it: the bodies' extents and locals (``scan``), every
    instruction's families (``deep``), or why they could not be read (``error``). A file
    without a code section has an empty decode: it uses nothing."""

    scan: wasm_code.LocalScan | None = None
    deep: wasm_code.DeepScan | None = None
    error: str | None = None


def read_code(r: Reader, m: Module, *, strict: bool) -> Code:
    """Every body's extents, then every instruction decoded (``wasm_code.decode_bodies``).
    A code section whose bodies do not fit it raises when ``strict`` (a linked module is then
    not WebAssembly) and is otherwise the reason; a body that does not decode, or holds an
    instruction outside the table, is the reason, with its offset."""
    if m.code is None:
        return Code(deep=wasm_code.DeepScan())
    start, end = m.code
    try:
        scan = wasm_code.scan_locals(r.buf, start, end, keep_bodies=True)
    except Truncated as exc:
        if strict:
            raise
        return Code(error=f"the code section could not be read: {exc}")
    try:
        deep = wasm_code.decode_bodies(r.buf, scan.bodies)
    except Truncated as exc:
        return Code(scan=scan, error=f"a function body could not be decoded: {exc}")
    return Code(scan, deep)


_STRUCTURE = "types, imports, globals, tables, elements or constant expressions"


def features_of(m: Module, code: Code, *, linked: bool) -> dict[str, list[str]]:
    """Each feature the module (``linked``) or object needs -> why: its structure
    (``Module.needs``, and for a module ``module_needs``), the value types and constant
    expressions outside the code (``Module.uses``) and the code's decode, each family through
    ``wasm_code.FAMILY_FEATURES``."""
    out: dict[str, list[str]] = {f: list(why) for f, why in m.needs.items()}
    if linked:
        for f, why in m.module_needs.items():
            out.setdefault(f, []).extend(why)
    sources = [(m.uses, _STRUCTURE)]
    if code.deep is not None:
        sources.append((code.deep.counts, "code"))
    for counts, where in sources:
        if not counts:
            continue
        for fam in wasm_code.FAMILIES:  # in this order whichever decode counted them
            n = counts.get(fam, 0)
            if n:
                for feat in wasm_code.FAMILY_FEATURES[fam]:
                    out.setdefault(feat, []).append(
                        f"{n} {wasm_code.FAMILY_WORDS[fam]} ({where})")
    return out


def _incomplete(m: Module, code: Code) -> list[str]:
    """Why the feature list may lack a feature: what could not be read."""
    return [*m.unread, *([code.error] if code.error else [])]


def _eh_encoding(f: Facts, m: Module, code: Code) -> None:
    """``abi.wasm_eh_encoding`` from every instruction and every type (docs/binary-formats.md
    §3.6): legacy instructions, exnref instructions, and the exnref types anywhere (locals,
    block types, function types in and out of rec groups, struct fields, globals, imported
    globals, tables, element segments, ``ref.null exn``). A body that cannot be decoded, or a
    section that cannot be read, leaves the fact unknown, with the reason."""
    missing = _incomplete(m, code)
    if missing:
        f.note("wasm_eh_encoding", "; ".join(missing))
        return
    assert code.deep is not None
    c = code.deep.counts
    legacy, exnref_ins = c["eh_legacy"], c["eh_exnref"]
    in_code, outside = c["exnref_type"], m.uses["exnref_type"]
    types = in_code + outside
    parts = []
    if legacy:
        parts.append(f"{legacy} legacy instructions (try/catch/catch_all/delegate/rethrow)")
    if exnref_ins:
        parts.append(f"{exnref_ins} exnref instructions (try_table/throw_ref)")
    if in_code:
        parts.append(f"{in_code} exnref types in the code (locals, block types, select, "
                     "heap types)")
    if outside:
        parts.append(f"{outside} exnref types outside the code (" + ", ".join(
            f"{n} in {where}" for where, n in sorted(m.exnref_at.items())) + ")")
    if c["eh_throw"]:
        parts.append(f"{c['eh_throw']} throw (the same instruction in both encodings)")
    exnref = exnref_ins + types
    f.abi.wasm_eh_encoding = ("both" if legacy and exnref else "legacy" if legacy
                              else "exnref" if exnref else "none")
    if not legacy and not exnref:
        parts.insert(0, "no instruction or type of either encoding")
    f.note("wasm_eh_encoding", "; ".join(parts))


def _features_fact(f: Facts, m: Module, code: Code, used: dict[str, list[str]],
                   enabled: list[str] | None) -> None:
    """``wasm_features`` and its completeness, ``simd128`` and ``relaxed_simd``: what the
    code and the structure need, and for an object what its ``target_features`` enable
    beside (a superset of the use, which links against it)."""
    missing = _incomplete(m, code)
    feats = set(used) | set(enabled or ())
    f.abi.wasm_features = sorted(feats)
    f.abi.wasm_features_complete = not missing
    if missing:  # first: what a rule that cannot decide quotes
        f.note("wasm_features", "partial: " + "; ".join(missing))
    for feat in sorted(used):
        f.note("wasm_features", f"{feat}: " + "; ".join(used[feat][:3]))
    if enabled is not None:
        f.note("wasm_features", "target_features enables " + (", ".join(enabled) or "none"))
    if not missing and not used:
        f.note("wasm_features", "no instruction, type or section needs a feature beyond "
               "WebAssembly 1.0")
    for fact, feat in (("simd128", "simd128"), ("relaxed_simd", "relaxed-simd")):
        if feat in (enabled or ()):
            f.note(fact, f"target_features +{feat}")
        if feat in used:
            f.note(fact, "; ".join(used[feat][:3]))
        if feat in feats:
            setattr(f.abi, fact, True)
        elif missing:
            f.note(fact, "unknown: " + "; ".join(missing))
        else:
            setattr(f.abi, fact, False)
            f.note(fact, f"no instruction or type needs {feat}"
                   + ("" if enabled is None else f", and target_features lacks {feat}"))


# --- shared rules ------------------------------------------------------------------------------


def _arch(m: Module) -> tuple[str | None, str | None]:
    if m.features and m.features.get("memory64") == "+":
        return "wasm64", "target_features +memory64"
    if m.memories:
        mem = m.memories[0]
        where = mem["imported"] or "defined memory"
        if mem["memory64"]:
            return "wasm64", f"{where} has 64-bit limits"
        return "wasm32", f"{where} has 32-bit limits"
    return None, None


def _list(names: list[str], limit: int = 6) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" (+{len(names) - limit} more)" if len(names) > limit else "")


def _details(m: Module) -> dict[str, Any]:
    return {
        "sections": [name for _, name, _, _ in m.sections],
        "imports": len(m.imports),
        "exports": len(m.exports),
        "functions": m.functions,
        "imported_functions": len(m.imports_of(Ext.FUNC)),
        "globals": m.globals,
        "tags": m.tags,
        "imported_tags": len(m.imports_of(Ext.TAG)),
        "memories": m.memories,
        "producers": m.producers or None,
    }


def _producer(m: Module, f: Facts) -> None:
    """The tools of the ``producers`` section (``processed-by`` clang, ``sdk`` Emscripten):
    LLVM writes it into every object; Emscripten's link drops it from the module unless
    ``-sEMIT_PRODUCERS_SECTION`` (docs/binary-formats.md, "Producers")."""
    found = []
    for fld, name, version in m.producer_entries[: producer.MAX_TEXTS]:
        text = f"{fld}: {name} {version}".strip()
        if fld == "language":
            f.note("producer", f"producers {text!r} (a source language)")
            continue
        found.append(("producers", text, producer.parse_wasm(fld, name, version)))
    absent = ("its producers section names no tool" if m.producer_entries else
              "no producers section (Emscripten drops it from a linked module unless "
              "-sEMIT_PRODUCERS_SECTION)" if f.kind != "object" else
              "no producers section (LLVM writes one into every object it compiles)")
    producer.record(f, found, absent=absent)


# --- objects -----------------------------------------------------------------------------------


# libc++'s inline namespace: std::__1, or std::__2 for Emscripten's own ABI version
_LIBCXX_NS = re.compile(r"St3__[0-9]|NSt3__[0-9]")


def _object_cxx_stdlib(f: Facts, syms: Symbols) -> None:
    """libc++ from its namespace in any symbol name (Emscripten ships no other C++ library);
    ``none`` is said only because the object's whole symbol table was read."""
    for name in (*syms.defined, *syms.undefined):
        m = _LIBCXX_NS.search(name)
        if m:
            f.abi.cxx_stdlib = "libc++"
            f.note("cxx_stdlib", f"symbols in libc++'s std::{m.group()[-3:]} namespace ({name})")
            return
    f.abi.cxx_stdlib = "none"
    f.note("cxx_stdlib", "no symbol names a C++ standard library namespace")


def _object_facts(r: Reader, m: Module, f: Facts, opts: ParseOptions) -> None:
    f.kind = "object"
    f.abi.lto = "none"
    f.note("lto", "wasm relocatable object (machine code, not bitcode)")
    linked = linked_symbols(r, m)
    if linked is None:
        f.details["linking_version"] = "unsupported"
    else:
        f.symbols = linked.symbols
        _object_cxx_stdlib(f, f.symbols)
    undefined = sorted(f.symbols.undefined) if f.symbols else []
    feats = m.features or {}
    enabled = sorted(k for k, v in feats.items() if v in "+=")
    disallowed = sorted(k for k, v in feats.items() if v == "-")
    if disallowed:
        f.details["disallowed_features"] = disallowed
    if m.features is None:
        f.note("wasm_features", "no target_features section")
    elif not feats:
        f.note("wasm_features", "target_features: empty")
    code = read_code(r, m, strict=False)
    if opts.deep and code.deep is not None:
        f.details["opcodes"] = dict(sorted(code.deep.counts.items()))
    _features_fact(f, m, code, features_of(m, code, linked=False), enabled)
    _object_threads(f, feats)
    f.arch, why = _arch(m)
    if why:
        f.note("arch", why)
    emc = [n for n in undefined if _EMSCRIPTEN_NAMES.match(n)]
    if emc:
        f.os = "emscripten"
        f.note("os", "references " + _list(emc, 4))
    _eh_encoding(f, m, code)
    if "exception-handling" in enabled:
        f.note("wasm_eh_encoding", "target_features +exception-handling (what the compiler "
               "enabled; the code above is what it holds)")
    _object_eh(f, m, linked, enabled, code)


def _object_threads(f: Facts, feats: dict[str, str]) -> None:
    has = [k for k in ("atomics", "bulk-memory") if feats.get(k) in ("+", "=")]
    if len(has) == 2:
        f.abi.threads = True
        f.note("threads", "target_features +atomics, +bulk-memory")
        return
    f.abi.threads = False
    missing = [k for k in ("atomics", "bulk-memory") if k not in has]
    if feats.get("shared-mem") == "-":
        # wasm-ld's own words, so a user can match the link error to this fact
        name = PurePath(f.path).name
        reason = (f"target_features -shared-mem: --shared-memory is disallowed by {name} "
                  "because it was not compiled with 'atomics' or 'bulk-memory' features")
    else:
        reason = "not compiled with " + " and ".join(f"'{k}'" for k in missing) + " features"
    f.note("threads", reason)
    f.details["threads_reason"] = reason


def _eh_instructions(code: Code) -> str | None:
    """"N EH instructions" when the code holds any (try, catch, throw, try_table, …)."""
    if code.deep is None:
        return None
    n = sum(code.deep.counts[k] for k in ("eh_legacy", "eh_exnref", "eh_throw"))
    return f"{n} EH instructions" if n else None


def _object_eh(f: Facts, m: Module, linked: Linked | None, enabled: list[str],
               code: Code) -> None:
    known = linked is not None  # without the symbol table, "no legacy markers" proves nothing
    undefined = linked.undefined if linked else []
    legacy = sorted({n for n in undefined if _LEGACY_EH.match(n)})
    invokes = sorted({n for n in undefined if _INVOKE.match(n)})
    wasm: list[str] = []
    if "exception-handling" in enabled:
        wasm.append("target_features +exception-handling")
    names = linked.names if linked else set()
    wasm += [f"{'references' if n in undefined else 'defines'} {n}"
             for n in _WASM_EH_SYMBOLS if n in names]
    if m.tags:
        wasm.append(f"tag section ({m.tags})")
    ins = _eh_instructions(code)
    if ins:
        wasm.append(ins)
    if legacy:
        f.note("eh", "references " + _list(legacy + invokes))
    if wasm:
        f.note("eh", "; ".join(wasm))
    if legacy and wasm:
        f.abi.eh = "mixed"
    elif legacy:
        f.abi.eh = "emscripten-legacy"
    elif wasm:
        f.abi.eh = "wasm"
    elif not known:
        f.note("eh", "no wasm EH markers, and the symbol table is in an unknown linking version")
    elif code.error:
        f.note("eh", f"no C++ EH markers, but {code.error}")
    else:
        f.abi.eh = "none"
        why = "no C++ EH markers (__resumeException, __cxa_find_matching_catch_*, " \
              "llvm_eh_typeid_for, exception-handling, __cpp_exception) and no EH instruction"
        if invokes:
            why += f"; {_list(invokes, 3)} only serve JS setjmp/longjmp"
        f.note("eh", why)


# --- linked modules ----------------------------------------------------------------------------


@dataclass
class _Asyncify:
    """What an Asyncify-instrumented module's state global and functions look like."""

    state_global: int
    data_global: int
    functions: list[str]
    state_checks: int | None  # instrumentation sites `global.get state; i32.const 2; i32.eq`


def _asyncify(r: Reader, m: Module, bodies: list[tuple[int, int]],
              count_checks: bool) -> _Asyncify | None:
    """Asyncify's runtime functions, found by their exact bodies (§3.7).

    Only bodies of the runtime's size are matched (each ~25 bytes; the pattern is anchored at
    the body start), so the cheap pass never scans the whole code section.
    """
    assert m.code is not None
    buf = r.buf
    nimp = len(m.imports_of(Ext.FUNC))
    exported = {idx: name for name, kind, idx in m.exports if kind == Ext.FUNC}
    found: dict[bytes, dict[str, int]] = {}
    stops: set[bytes] = set()
    for i, (start, end) in enumerate(bodies):
        if not _ASYNCIFY_MIN <= end - start <= _ASYNCIFY_MAX:
            continue
        piece = bytes(buf[start:end])
        mt = _ASYNCIFY_START.fullmatch(piece)
        if mt is not None:
            role = "start_unwind" if mt.group(1) == b"\x01" else "start_rewind"
            found.setdefault(mt.group(2) + mt.group(3), {})[role] = i
        elif piece.startswith(b"\x00\x41\x00\x24"):
            stops.add(piece)
    for key, roles in found.items():
        if len(roles) != 2:
            continue
        g_state, g_data = _split_globals(key)
        if _STOP_TEMPLATE % (g_state, g_data, g_data) not in stops:
            continue
        names = [exported.get(nimp + roles[k], f"func[{nimp + roles[k]}]")
                 for k in ("start_unwind", "start_rewind")]
        checks = None
        if count_checks:  # a 30 ms scan of 28 MB: only in the deep pass
            start, end = m.code
            code = bytes(r.view(start, end - start, "code section"))
            checks = code.count(b"\x23" + g_state + b"\x41\x02\x46")
        return _Asyncify(_leb_value(g_state), _leb_value(g_data), names, checks)
    return None


def _split_globals(key: bytes) -> tuple[bytes, bytes]:
    """Split the two concatenated LEBs matched by the Asyncify pattern."""
    for i, b in enumerate(key):
        if b < 0x80:
            return key[: i + 1], key[i + 1 :]
    raise ValueError("malformed global index")


def _leb_value(b: bytes) -> int:
    v, _ = wasm_code.uleb(b, 0, len(b))
    return v


def _module_facts(r: Reader, m: Module, f: Facts, path: str, opts: ParseOptions) -> None:
    f.kind = "module"
    f.abi.lto = "none"
    f.note("lto", "linked wasm module")
    imported = [i.field for i in m.imports]
    f.symbols = Symbols(
        defined=[n for n, _, _ in m.exports],
        undefined=imported,
        exports=[n for n, _, _ in m.exports],
    )
    f.arch, why = _arch(m)
    if why:
        f.note("arch", why)
    mods = sorted({i.module for i in m.imports})
    readable = not m.imports or any(mo in _READABLE_MODULES for mo in mods)
    f.details["import_modules"] = mods
    f.details["import_names_minified"] = not readable
    glue = None
    own = own_file(path)
    gpath, refused = emscripten.find_glue(str(own)) if own is not None else (None, None)
    if refused:
        f.note("glue", refused)
    if gpath is not None:
        glue = emscripten.read_glue(gpath)
    if glue is not None:
        f.details["glue"] = {"path": glue.path, "invoke_wrappers": glue.invoke_wrappers,
                             "cxx_eh_runtime": list(glue.cxx_eh_runtime),
                             "jspi": list(glue.jspi_markers)}
    _module_os(f, m, glue)
    code = read_code(r, m, strict=True)
    if code.scan is not None:
        f.details["v128_local_decls"] = code.scan.v128_locals
        f.details["exnref_local_decls"] = code.scan.exnref_locals
    if opts.deep and code.deep is not None:
        f.details["opcodes"] = dict(sorted(code.deep.counts.items()))
        f.details["decoded_functions"] = code.deep.functions
    _module_threads(f, m)
    _features_fact(f, m, code, features_of(m, code, linked=True), None)
    _eh_encoding(f, m, code)
    _module_eh(f, m, glue, readable, code)
    _module_async(f, r, m, glue, code.scan, opts.deep)


def _module_os(f: Facts, m: Module, glue: emscripten.Glue | None) -> None:
    emc = [i.field for i in m.imports if _EMSCRIPTEN_NAMES.match(i.field)]
    if emc:
        f.os = "emscripten"
        f.note("os", "imports " + _list(sorted(set(emc)), 4))
    elif glue is not None and (glue.emscripten or glue.invoke_wrappers):
        f.os = "emscripten"
        f.note("os", f"Emscripten JS glue {glue.path}")
    elif m.imports and all(i.module in _WASI_MODULES for i in m.imports):
        f.os = "wasi"
        f.note("os", "imports only from " + ", ".join(sorted({i.module for i in m.imports})))


def _module_threads(f: Facts, m: Module) -> None:
    if not m.memories:
        f.note("threads", "no memory")
        return
    mem = m.memories[0]
    where = mem["imported"] or "defined memory"
    f.abi.threads = bool(mem["shared"])
    f.note("threads", f"{where} is {'shared' if mem['shared'] else 'not shared'}"
           f" ({mem['min']}..{mem['max']} pages)")


def _module_eh(f: Facts, m: Module, glue: emscripten.Glue | None, readable: bool,
               code: Code) -> None:
    native: list[str] = []
    if m.tags:
        native.append(f"tag section ({m.tags} tag{'s' if m.tags > 1 else ''})")
    itags = m.imports_of(Ext.TAG)
    if itags:
        native.append("imports tag " + _list([f"{i.module}.{i.field}" for i in itags], 3))
    ins = _eh_instructions(code)
    if ins:
        native.append(ins)
    legacy: list[str] = []
    names = [i.field for i in m.imports]
    markers = sorted({n for n in names if _LEGACY_EH.match(n)})
    if markers:
        invokes = sorted({n for n in names if _INVOKE.match(n)})
        legacy.append("imports " + _list(markers + invokes))
    if glue is not None and glue.cxx_eh_runtime:
        legacy.append(f"JS glue {glue.path}: {glue.invoke_wrappers} invoke wrappers and the "
                      "JS C++ EH runtime (" + ", ".join(glue.cxx_eh_runtime) + ")")
    for why in native + legacy:
        f.note("eh", why)
    if native and legacy:
        f.abi.eh = "mixed"
    elif native:
        f.abi.eh = "wasm"
    elif legacy:
        f.abi.eh = "emscripten-legacy"
    elif code.error:
        f.note("eh", f"no tags or C++ EH markers, but {code.error}")
    elif readable or glue is not None:
        f.abi.eh = "none"
        src = "imports" if readable else f"JS glue {glue.path if glue else ''}"
        f.note("eh", f"no tags, no EH instruction, no C++ EH markers in the {src}")
    else:
        f.note("eh", "import names are minified and there is no JS glue next to the module")


def _module_async(f: Facts, r: Reader, m: Module, glue: emscripten.Glue | None,
                  scan: wasm_code.LocalScan | None, deep: bool) -> None:
    found = _asyncify(r, m, scan.bodies, deep) if (m.code and scan) else None
    if found is not None:
        f.abi.async_ = "asyncify"
        checked = "" if found.state_checks is None else f" checked {found.state_checks} times"
        f.note("async", f"Asyncify runtime bodies ({', '.join(found.functions)}); state global "
               f"{found.state_global}{checked}")
        f.details["asyncify"] = {"state_global": found.state_global,
                                 "data_global": found.data_global,
                                 "functions": found.functions,
                                 "state_checks": found.state_checks}
        return
    if glue is None:
        f.note("async", "not Asyncify; JSPI would only show in JS glue, and there is none")
        return
    if glue.jspi_markers:
        f.abi.async_ = "jspi"
        f.note("async", f"JS glue {glue.path} uses " + ", ".join(glue.jspi_markers))
    else:
        f.abi.async_ = "none"
        f.note("async", f"no Asyncify runtime in the wasm, no JSPI in the glue {glue.path}")


# --- the reader --------------------------------------------------------------------------------


class WasmReader:
    """``FormatReader`` for ``\\0asm`` files: relocatable objects and linked modules."""

    name = "wasm"

    def sniff(self, head: bytes) -> bool:
        return head[:4] == MAGIC

    def parse(self, data: Buffer, path: str, opts: ParseOptions) -> Facts:
        r = Reader(data)
        m = parse_container(r)
        f = Facts(path=path, format="wasm")
        if m.linking is not None:
            _object_facts(r, m, f, opts)
        else:
            _module_facts(r, m, f, path, opts)
            dylink = [n for sid, n, _, _ in m.sections if sid == Sec.CUSTOM and n in _DYLINK]
            if dylink:  # an Emscripten SIDE_MODULE / wasm-ld -shared output
                f.kind = "shared-library"
                f.note("kind", f"custom section {dylink[0]!r} (a dynamically linked side module)")
        f.details.update(_details(m))
        _producer(m, f)
        if not opts.symbols and f.kind != "object":
            f.symbols = None  # a module's import/export lists are large; only on request
        return f


READER = WasmReader()
