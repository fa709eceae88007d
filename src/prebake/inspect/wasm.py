"""WebAssembly modules and relocatable objects → ``Facts`` (docs/binary-formats.md §3).

Specs: the WebAssembly core binary format (sections, imports, limits), LLVM's
``tool-conventions/Linking.md`` (the ``linking`` custom section of relocatable objects),
``tool-conventions/ProducersSection.md`` and the ``target_features`` section, plus the
exception-handling, threads and SIMD proposals. Every read is bounded by its section (and the
section by the file) through ``binreader.Reader``; a bad length raises ``Truncated``, which the
frame turns into a one-line ``FormatError`` naming the file.

Relocatable objects (they carry a ``linking`` section) get symbols from its symbol table and
features from ``target_features``. Linked modules (Emscripten output has no custom sections at
all) get threads from shared memory, EH from tags/imports/the JS glue, Asyncify from the
runtime's byte patterns, and SIMD from ``v128`` in types/locals, or from a full decode
(``ParseOptions.deep``). Objects and modules alike get the EH encoding (legacy, exnref, both,
none) from their instructions (``wasm_code.eh_scan``).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import PurePath
from typing import Any

from prebake.inspect import emscripten, hotloops, magic, wasm_code
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
    """One import of a wasm module, with the memory and global flags the checks read."""

    module: str
    field: str
    kind: int
    shared: bool = False
    memory64: bool = False
    mutable: bool = False
    limits: tuple[int, int | None] | None = None


@dataclass
class Module:
    """The parsed container: what later rules read."""

    sections: list[tuple[int, str, int, int]] = field(default_factory=list)  # id, name, start, end
    imports: list[Import] = field(default_factory=list)
    exports: list[tuple[str, int, int]] = field(default_factory=list)  # name, kind, index
    memories: list[dict[str, Any]] = field(default_factory=list)
    functions: int = 0
    globals: int = 0
    tags: int = 0
    types: int = 0
    v128_in_types: int = 0
    exnref_in_types: int = 0
    multivalue_types: int = 0
    gc_types: bool = False
    features: dict[str, str] | None = None  # name -> prefix ("+", "-", "=")
    producers: dict[str, list[str]] = field(default_factory=dict)
    linking: tuple[int, int] | None = None  # payload bounds of the linking section
    code: tuple[int, int] | None = None

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

    def name(self) -> str:
        return self.bytes(self.uleb()).decode("utf-8", "replace")

    def skip_leb(self) -> None:
        self.pos = wasm_code.skip_leb(self.buf, self.pos, self.end)

    def skip_valtype(self) -> int:
        t = self.u8()
        if t in (wasm_code.REF_NULL_HT, wasm_code.REF_HT):
            self.skip_leb()
        return t

    def limits(self) -> tuple[int, int, int | None]:
        flags = self.u8()
        lo = self.uleb()
        hi = self.uleb() if flags & 0x01 else None
        return flags, lo, hi


# --- container ---------------------------------------------------------------------------------


def _sections(r: Reader) -> list[tuple[int, str, int, int]]:
    if r.bytes(0, 4, "magic") != MAGIC:
        raise Truncated("not a WebAssembly file")
    version = r.bytes(4, 4, "version")
    if version != VERSION_1:
        raise ValueError(f"unsupported wasm version {version.hex(' ')} (a component?)")
    out: list[tuple[int, str, int, int]] = []
    pos = 8
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
            out.append((sid, SECTION_NAMES[sid], start, end))
        else:
            raise ValueError(f"unknown section id {sid} at offset {pos}")
        pos = end
    return out


def _parse_types(m: Module, c: _Cur) -> None:
    n = c.count(3)
    for _ in range(n):
        form = c.u8()
        if form != 0x60:  # GC proposal types: stop here, the rest is not needed for facts
            m.gc_types = True
            return
        m.types += 1
        results = 0
        for part in range(2):
            for _ in range(c.count()):
                t = c.skip_valtype()
                if t == wasm_code.V128:
                    m.v128_in_types += 1
                elif t == wasm_code.EXNREF:
                    m.exnref_in_types += 1
                results += part
        if results > 1:
            m.multivalue_types += 1


def _parse_imports(m: Module, c: _Cur) -> None:
    for _ in range(c.count(4)):
        imp = Import(c.name(), c.name(), c.u8())
        if imp.kind == Ext.FUNC:
            c.skip_leb()
        elif imp.kind == Ext.TABLE:
            c.skip_valtype()
            c.limits()
        elif imp.kind == Ext.MEMORY:
            flags, lo, hi = c.limits()
            imp.shared, imp.memory64, imp.limits = bool(flags & 2), bool(flags & 4), (lo, hi)
        elif imp.kind == Ext.GLOBAL:
            c.skip_valtype()
            imp.mutable = c.u8() == 1
        elif imp.kind == Ext.TAG:
            c.u8()
            c.skip_leb()
        else:
            raise ValueError(f"unknown import kind {imp.kind} for {imp.module}.{imp.field}")
        m.imports.append(imp)


def _parse_features(m: Module, c: _Cur) -> None:
    m.features = {}
    for _ in range(c.count(2)):
        prefix = chr(c.u8())
        m.features[c.name()] = prefix


def _parse_producers(m: Module, c: _Cur) -> None:
    for _ in range(c.count(2)):
        key = c.name()
        vals = m.producers.setdefault(key, [])
        for _ in range(c.count(2)):
            name, ver = c.name(), c.name()
            vals.append(f"{name} {ver}".strip())


def parse_container(r: Reader) -> Module:
    """Sections, imports, exports, memories, counts, custom sections: the cheap facts."""
    m = Module(sections=_sections(r))
    for sid, name, start, end in m.sections:
        c = _Cur(r, start, end)
        if sid == Sec.TYPE:
            counted = hotloops.scan.wasm_types(r.buf, start, end)
            if counted is None:  # the reference reads it again and says what is wrong
                _parse_types(m, c)
            else:
                types, v128, exnref, multivalue, gc = counted
                m.types += types
                m.v128_in_types += v128
                m.exnref_in_types += exnref
                m.multivalue_types += multivalue
                m.gc_types = m.gc_types or gc
        elif sid == Sec.IMPORT:
            fast = hotloops.scan.wasm_imports(r.buf, start, end)
            if fast is None:  # the reference reads it again and says what is wrong
                _parse_imports(m, c)
            else:
                m.imports.extend(Import(*t) for t in fast)
        elif sid == Sec.FUNCTION:
            m.functions = c.count()
        elif sid == Sec.GLOBAL:
            m.globals = c.count()
        elif sid == Sec.TAG:
            m.tags = c.count()
        elif sid == Sec.MEMORY:
            for _ in range(c.count(2)):
                flags, lo, hi = c.limits()
                m.memories.append({"min": lo, "max": hi, "shared": bool(flags & 2),
                                   "memory64": bool(flags & 4), "imported": None})
        elif sid == Sec.EXPORT:
            for _ in range(c.count(3)):
                m.exports.append((c.name(), c.u8(), c.uleb()))
        elif sid == Sec.CODE:
            m.code = (start, end)
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
    return m


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
    f.abi.wasm_features = enabled
    f.abi.wasm_features_complete = True  # what the compiler enabled: a superset of the use
    if disallowed:
        f.details["disallowed_features"] = disallowed
    if m.features is None:
        f.note("wasm_features", "no target_features section (no feature enabled)")
    else:
        f.note("wasm_features", "target_features: " + ", ".join(
            f"{v}{k}" for k, v in sorted(feats.items())) if feats else "target_features: empty")
    _object_threads(f, feats, PurePath(f.path).name)
    f.abi.simd128 = "simd128" in enabled
    f.abi.relaxed_simd = "relaxed-simd" in enabled
    f.note("simd128", "target_features " + ("+simd128" if f.abi.simd128 else "lacks simd128"))
    f.note("relaxed_simd", "target_features " + (
        "+relaxed-simd" if f.abi.relaxed_simd else "lacks relaxed-simd"))
    f.arch, why = _arch(m)
    if why:
        f.note("arch", why)
    emc = [n for n in undefined if _EMSCRIPTEN_NAMES.match(n)]
    if emc:
        f.os = "emscripten"
        f.note("os", "references " + _list(emc, 4))
    _object_eh(f, m, linked, enabled, opts, r)


def _object_threads(f: Facts, feats: dict[str, str], name: str) -> None:
    has = [k for k in ("atomics", "bulk-memory") if feats.get(k) in ("+", "=")]
    if len(has) == 2:
        f.abi.threads = True
        f.note("threads", "target_features +atomics, +bulk-memory")
        return
    f.abi.threads = False
    missing = [k for k in ("atomics", "bulk-memory") if k not in has]
    if feats.get("shared-mem") == "-":
        # wasm-ld's own words, so a user can match the link error to this fact
        reason = (f"target_features -shared-mem: --shared-memory is disallowed by {name} "
                  "because it was not compiled with 'atomics' or 'bulk-memory' features")
    else:
        reason = "not compiled with " + " and ".join(f"'{k}'" for k in missing) + " features"
    f.note("threads", reason)
    f.details["threads_reason"] = reason


def _object_eh(f: Facts, m: Module, linked: Linked | None, enabled: list[str],
               opts: ParseOptions, r: Reader) -> None:
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
    deep = _deep(r, m) if (opts.deep and m.code) else None
    if deep is not None:
        f.details["opcodes"] = dict(deep.counts)
        n = sum(deep.counts[k] for k in ("eh_legacy", "eh_exnref", "eh_throw"))
        if n:
            wasm.append(f"{n} EH instructions")
    if "exception-handling" not in enabled:
        f.abi.wasm_eh_encoding = "none"
        f.note("wasm_eh_encoding", "target_features lacks exception-handling: the compiler "
               "could emit no EH instruction")
    else:
        scan = None
        if m.code and deep is None:
            start, end = m.code
            try:
                scan = wasm_code.scan_locals(r.buf, start, end, keep_bodies=True)
            except Truncated as exc:
                f.note("wasm_eh_encoding", f"the code section could not be read: {exc}")
        if m.code is None or scan is not None or deep is not None:
            _eh_encoding(f, r, m, scan, deep)
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
    else:
        f.abi.eh = "none"
        why = "no C++ EH markers (__resumeException, __cxa_find_matching_catch_*, " \
              "llvm_eh_typeid_for, exception-handling, __cpp_exception)"
        if invokes:
            why += f"; {_list(invokes, 3)} only serve JS setjmp/longjmp"
        f.note("eh", why)


# --- linked modules ----------------------------------------------------------------------------


def _deep(r: Reader, m: Module) -> wasm_code.DeepScan:
    assert m.code is not None
    start, end = m.code
    buf = bytes(r.view(start, end - start, "code section"))
    scan = wasm_code.scan_locals(buf, 0, len(buf), keep_bodies=True)
    return wasm_code.decode_bodies(buf, scan.bodies)


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
    scan = None
    if m.code:
        start, end = m.code
        scan = wasm_code.scan_locals(r.buf, start, end, keep_bodies=True)
        f.details["v128_local_decls"] = scan.v128_locals
        f.details["exnref_local_decls"] = scan.exnref_locals
    deep = _deep(r, m) if (opts.deep and m.code) else None
    if deep is not None:
        f.details["opcodes"] = dict(sorted(deep.counts.items()))
        f.details["decoded_functions"] = deep.functions
    _module_threads(f, m)
    _module_simd(f, m, scan, deep)
    _module_eh(f, r, m, glue, readable, scan, deep)
    _module_async(f, r, m, glue, scan, deep is not None)
    _module_features(f, m, scan, deep)


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


def _module_simd(f: Facts, m: Module, scan: wasm_code.LocalScan | None,
                 deep: wasm_code.DeepScan | None) -> None:
    if m.features is not None:
        f.abi.simd128 = m.features.get("simd128") == "+"
        f.abi.relaxed_simd = m.features.get("relaxed-simd") == "+"
        f.note("simd128", "target_features")
        f.note("relaxed_simd", "target_features")
        return
    if deep is not None:
        n, nr = deep.counts["simd"], deep.counts["relaxed_simd"]
        f.abi.simd128 = bool(n or nr)
        f.abi.relaxed_simd = bool(nr)
        f.note("simd128", f"{n + nr} SIMD instructions decoded")
        f.note("relaxed_simd", f"{nr} relaxed-SIMD instructions decoded")
        return
    hits = []
    if m.v128_in_types:
        hits.append(f"v128 in {m.v128_in_types} function type slots")
    if scan and scan.v128_locals:
        hits.append(f"{scan.v128_locals} v128 local declarations")
    if hits:
        f.abi.simd128 = True
        f.note("simd128", "; ".join(hits))
    else:
        f.note("simd128", "no v128 in types or locals; decode instructions (deep) to be sure")
    f.note("relaxed_simd", "needs an instruction decode (deep)")


def _module_eh(f: Facts, r: Reader, m: Module, glue: emscripten.Glue | None, readable: bool,
               scan: wasm_code.LocalScan | None, deep: wasm_code.DeepScan | None) -> None:
    native: list[str] = []
    if m.tags:
        native.append(f"tag section ({m.tags} tag{'s' if m.tags > 1 else ''})")
    itags = m.imports_of(Ext.TAG)
    if itags:
        native.append("imports tag " + _list([f"{i.module}.{i.field}" for i in itags], 3))
    if scan is not None or deep is not None or m.code is None:
        _eh_encoding(f, r, m, scan, deep)
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
    elif readable or glue is not None:
        f.abi.eh = "none"
        src = "imports" if readable else f"JS glue {glue.path if glue else ''}"
        f.note("eh", f"no tags, no C++ EH markers in the {src}")
    else:
        f.note("eh", "import names are minified and there is no JS glue next to the module")


def _eh_encoding(f: Facts, r: Reader, m: Module, scan: wasm_code.LocalScan | None,
                 deep: wasm_code.DeepScan | None) -> None:
    """``abi.wasm_eh_encoding`` from the instructions themselves (docs/binary-formats.md §3.6):
    the deep decode's counts when it ran, else ``wasm_code.eh_scan`` over every body. A body
    that does not decode leaves the fact unknown, with the reason."""
    if m.code is None:
        f.abi.wasm_eh_encoding = "none"
        f.note("wasm_eh_encoding", "no code section")
        return
    if deep is not None:
        c = deep.counts
        eh = wasm_code.EhScan(c["eh_legacy"], c["eh_exnref"], c["eh_throw"])
    else:
        assert scan is not None
        try:
            eh = wasm_code.eh_scan(r.buf, scan.bodies)
        except Truncated as exc:
            f.note("wasm_eh_encoding", f"a function body could not be decoded: {exc}")
            return
    types = m.exnref_in_types + (scan.exnref_locals if scan is not None else 0) \
        + eh.exnref_types
    legacy, exnref = eh.legacy, eh.exnref + types
    parts = []
    if legacy:
        parts.append(f"{legacy} legacy instructions (try/catch/catch_all/delegate/rethrow)")
    if eh.exnref:
        parts.append(f"{eh.exnref} exnref instructions (try_table/throw_ref)")
    if types:  # the deep decode counts no block types: its evidence says where it looked
        where = "locals and function types" if deep is not None else \
            "locals, block and function types"
        parts.append(f"{types} exnref types ({where})")
    if eh.throw:
        parts.append(f"{eh.throw} throw (the same instruction in both encodings)")
    f.abi.wasm_eh_encoding = ("both" if legacy and exnref else "legacy" if legacy
                              else "exnref" if exnref else "none")
    if not legacy and not exnref:
        parts.insert(0, "no instruction or type of either encoding")
    f.note("wasm_eh_encoding", "; ".join(parts))


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


def _module_features(f: Facts, m: Module, scan: wasm_code.LocalScan | None,
                     deep: wasm_code.DeepScan | None) -> None:
    if m.features is not None:
        f.abi.wasm_features = sorted(k for k, v in m.features.items() if v in "+=")
        f.abi.wasm_features_complete = True
        f.note("wasm_features", "target_features section")
        return
    feats: set[str] = set()
    if any(mem["shared"] for mem in m.memories):
        feats.add("atomics")
    if any(mem["memory64"] for mem in m.memories):
        feats.add("memory64")
    if any(i.mutable for i in m.imports_of(Ext.GLOBAL)):
        feats.add("mutable-globals")
    if m.tags or m.imports_of(Ext.TAG):
        feats.add("exception-handling")
    if m.multivalue_types:
        feats.add("multivalue")
    if any(sid == Sec.DATACOUNT for sid, _, _, _ in m.sections):
        feats.add("bulk-memory")
    if m.v128_in_types or (scan and scan.v128_locals):
        feats.add("simd128")
    if deep is not None:
        feats.update(deep.features())
    f.abi.wasm_features = sorted(feats)
    f.abi.wasm_features_complete = deep is not None
    if deep is not None:
        f.note("wasm_features", "inferred from usage (memory, imports, sections, types, "
                                "every instruction)")
    else:
        f.note("wasm_features", "partial: inferred from memory, imports, sections, types and "
               "locals without decoding the code, so features only instructions show (sign-ext, "
               "nontrapping-fptoint, …) are not seen; --deep decodes every instruction")


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
        if not opts.symbols and f.kind != "object":
            f.symbols = None  # a module's import/export lists are large; only on request
        return f


READER = WasmReader()
