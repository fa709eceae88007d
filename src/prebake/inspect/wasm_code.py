"""WebAssembly instructions and value types: the one opcode table, and the decoders that use it.

Every instruction of WebAssembly 3.0 is in ``OPS`` (single-byte opcodes) and ``PREFIXED``
(the ``0xFB`` GC, ``0xFC``, ``0xFD`` SIMD and ``0xFE`` threads pages), each with its
immediates as the specification gives them; the C decode (``_scan.wasm_deep_scan``) is given
tables made from these (``deep_tables``), so the instruction set is stated once. Where it came
from: the WebAssembly Core Specification 3.0, binary format §5.4 "Instructions" and §5.3
"Types" (https://webassembly.github.io/spec/core/binary/), with the threads proposal's
``0xFE`` page (not in 3.0, emitted by every ``-pthread`` build) and legacy exception handling
(``try``/``catch``/``catch_all``/``delegate``/``rethrow``, the proposal's legacy appendix),
checked opcode for opcode against wasm-tools' decoder (``crates/wasmparser/src/
binary_reader.rs``, ``visit_operator`` and ``visit_0xfb/0xfc/0xfd/0xfe_operator``, and the
proposal of each operator in ``for_each_operator!``, ``crates/wasmparser/src/lib.rs``;
wasm-tools 1.262). Two additions: wide arithmetic (four ``0xFC`` opcodes without immediates,
LLVM's ``wide-arithmetic`` feature, on in wasm-tools' defaults) and LLVM 14's pre-standard
relaxed-SIMD opcodes (Debian 12's Emscripten 3.1.6 emits them in gaps of the final SIMD page;
verified with ``clang -mrelaxed-simd`` and ``llvm-objdump``). Anything else (stack switching,
custom descriptors, memory control, shared-everything threads: proposals outside 3.0) is an
unknown opcode: the decode stops there and says where, it never guesses an immediate.

What the decode yields: how many instructions and value types of each *family* a body holds
(``FAMILIES``); ``FAMILY_FEATURES`` names the features each family needs, in LLVM's
``target_features`` spelling, which is how ``wasm.py`` turns a module's code into its feature
list, its SIMD facts and its EH encoding. The families follow the specification's proposals as
wasm-tools' validator gates them (``crates/wasmparser/src/validator``): a reference type in any
value position needs reference types, a non-nullable or indexed one typed function references,
``any``/``eq``/``i31``/``struct``/``array``/``none`` and the bottom types GC, ``exn``/``noexn``
exception handling (tests/integration/test_wasm_differential.py holds this to ``wasm-tools
validate --features`` on random modules).

Two passes over the code section: ``scan_locals`` reads each body's size and local
declarations (the extents every later step needs); ``decode_bodies`` decodes every instruction
of every body, in C (``_scan.wasm_deep_scan``; the flagship's 68 MB archive in a tenth of a
second), which is the default path; a body the C cannot read is decoded again here, alone,
to say where and why. The Python here is the reference the C is held to
(tests/unit/test_scan.py). Every body must decode to exactly its size, so a wrong immediate
cannot go unnoticed.
"""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass, field

from prebake.inspect import hotloops
from prebake.inspect.binreader import Buffer, Truncated

V128 = 0x7B
EXNREF = 0x69
REF_NULL_HT = 0x63  # (ref null ht)
REF_HT = 0x64  # (ref ht)
I8, I16 = 0x78, 0x77  # packed storage types (struct and array fields only)

# --- families and the features they need ------------------------------------------------------

# The families a decode counts, in the order of the C loop's answer. Instruction families
# first, then the value types the code names (locals, block types, typed ``select``, the heap
# types of ``ref.null``/``ref.test``/``ref.cast``/``br_on_cast``), which wasm.py also counts
# for every other type position of a module.
FAMILIES = (
    "simd", "relaxed_simd", "atomics", "bulk_memory", "sat_trunc", "sign_ext",
    "eh_legacy", "eh_exnref", "eh_throw", "tail_call", "reference_types", "typed_funcref",
    "gc", "multivalue", "multimemory", "overlong_table", "wide_arith",
    # value types
    "v128_type", "exnref_type", "reftype", "gc_type", "typed_ref",
)
BIT = {f: 1 << i for i, f in enumerate(FAMILIES)}

# What each family needs, in target_features names (prebake.abikeys.KNOWN_WASM_FEATURES).
# Every reference type needs reference types (the validator's check_ref_type), exnref too.
FAMILY_FEATURES: dict[str, tuple[str, ...]] = {
    "simd": ("simd128",),
    "v128_type": ("simd128",),
    "relaxed_simd": ("relaxed-simd",),
    "atomics": ("atomics",),
    "bulk_memory": ("bulk-memory",),
    "sat_trunc": ("nontrapping-fptoint",),
    "sign_ext": ("sign-ext",),
    "eh_legacy": ("exception-handling",),
    "eh_exnref": ("exception-handling",),
    "eh_throw": ("exception-handling",),
    "exnref_type": ("exception-handling", "reference-types"),
    "tail_call": ("tail-call",),
    "reference_types": ("reference-types",),
    "reftype": ("reference-types",),
    "overlong_table": ("reference-types",),  # call_indirect's table as a LEB, not one 0x00
    "typed_funcref": ("function-references",),
    "typed_ref": ("function-references", "reference-types"),
    "gc": ("gc",),
    "gc_type": ("gc", "reference-types"),
    "multivalue": ("multivalue",),
    "multimemory": ("multimemory",),
    "wide_arith": ("wide-arithmetic",),
}

# How a family is said in evidence ("12 SIMD instructions").
FAMILY_WORDS = {
    "simd": "SIMD instructions", "relaxed_simd": "relaxed-SIMD instructions",
    "atomics": "atomic instructions", "bulk_memory": "bulk-memory instructions",
    "sat_trunc": "saturating float-to-int instructions",
    "sign_ext": "sign-extension instructions",
    "eh_legacy": "legacy EH instructions (try/catch/catch_all/delegate/rethrow)",
    "eh_exnref": "exnref EH instructions (try_table/throw_ref)", "eh_throw": "throw",
    "tail_call": "tail calls", "reference_types": "reference-type instructions",
    "typed_funcref": "typed function-reference instructions", "gc": "GC instructions",
    "multivalue": "block types by type index", "multimemory": "memory indices in memargs",
    "overlong_table": "call_indirect table indices as LEBs",
    "wide_arith": "wide-arithmetic instructions",
    "v128_type": "v128 types", "exnref_type": "exnref types", "reftype": "reference types",
    "gc_type": "GC reference types", "typed_ref": "non-nullable or indexed reference types",
}


class Bounds(Truncated):
    """A body or expression did not decode to exactly its declared size, or holds an opcode
    or type outside the table (a corrupt file, or a proposal beyond Wasm 3.0)."""


# --- LEB128 -----------------------------------------------------------------------------------


def uleb(buf: Buffer, pos: int, end: int) -> tuple[int, int]:
    """Unsigned LEB128 at ``pos`` (at most 10 bytes), bounded by ``end``."""
    result = 0
    shift = 0
    while True:
        if pos >= end:
            raise Truncated(f"LEB128 at offset {pos} runs past its section/body end {end}")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise Truncated(f"LEB128 longer than 10 bytes before offset {pos}")


def skip_leb(buf: Buffer, pos: int, end: int) -> int:
    """Position after a (signed or unsigned) LEB128, without computing its value."""
    start = pos
    while True:
        if pos >= end:
            raise Truncated(f"LEB128 at offset {start} runs past its section/body end {end}")
        b = buf[pos]
        pos += 1
        if b < 0x80:
            return pos
        if pos - start >= 10:
            raise Truncated(f"LEB128 longer than 10 bytes at offset {start}")


# --- value types (§5.3) -----------------------------------------------------------------------

_GC_HEAP = (0x6E, 0x6D, 0x6C, 0x6B, 0x6A, 0x71, 0x72, 0x73)  # any eq i31 struct array none
# noextern nofunc
# The abstract heap types of 3.0, each with the families a reference to it needs beside
# ``reftype``: func and extern none more, exn/noexn exception handling, the rest GC.
ABSTRACT_HEAP: dict[int, tuple[str, ...]] = {0x70: (), 0x6F: (), 0x69: ("exnref_type",),
                                             0x74: ("exnref_type",),
                                             **dict.fromkeys(_GC_HEAP, ("gc_type",))}
NUMERIC = (0x7F, 0x7E, 0x7D, 0x7C)  # i32 i64 f32 f64


def valtype_masks() -> list[int]:
    """For each first byte of a value type, the families it names (as ``BIT`` masks); -1 for
    a byte that begins no value type, 0x63/0x64 (a reference with a heap type) apart."""
    out = [-1] * 256
    for b in NUMERIC:
        out[b] = 0
    out[V128] = BIT["v128_type"]
    for b, fams in ABSTRACT_HEAP.items():  # the short forms: (ref null ht) of an abstract ht
        out[b] = BIT["reftype"] | sum(BIT[f] for f in fams)
    return out


def heap_masks() -> list[int]:
    """For each byte that is an abstract heap type, the families a reference to it needs
    (``reftype`` included); -1 for the others (a type index is read as an s33)."""
    out = [-1] * 256
    for b, fams in ABSTRACT_HEAP.items():
        out[b] = BIT["reftype"] | sum(BIT[f] for f in fams)
    return out


_VT = valtype_masks()
_HEAP = heap_masks()


def heaptype(buf: Buffer, pos: int, end: int) -> tuple[int, int]:
    """A heap type (an abstract one's byte, or a type index as a non-negative s33): the
    position after it and the families a reference to it names."""
    if pos >= end:
        raise Truncated(f"heap type at offset {pos} runs past its end {end}")
    b = buf[pos]
    if 0x40 <= b < 0x80:  # a negative one-byte s33: an abstract heap type
        mask = _HEAP[b]
        if mask < 0:
            raise Bounds(f"unknown heap type 0x{b:02x} at offset {pos}")
        return pos + 1, mask
    start = pos
    pos = skip_leb(buf, pos, end)
    if buf[pos - 1] & 0x40:  # a negative s33 of several bytes is no heap type
        raise Bounds(f"unknown heap type at offset {start}")
    return pos, BIT["reftype"] | BIT["typed_ref"]


def non_null(first: int) -> int:
    """What a non-nullable reference adds to its heap type's families (the byte ``first``
    begins it): typed function references for ``func`` and ``extern`` (an indexed type has
    them already); the other abstract types need only their own proposal (the validator's
    check_ref_type)."""
    return BIT["typed_ref"] if first in (0x70, 0x6F) else 0


def valtype(buf: Buffer, pos: int, end: int, packed: bool = False) -> tuple[int, int]:
    """A value type (or, with ``packed``, a field's storage type): the position after it and
    the families it names."""
    if pos >= end:
        raise Truncated(f"value type at offset {pos} runs past its end {end}")
    t = buf[pos]
    if t in (REF_NULL_HT, REF_HT):
        ht = pos + 1
        pos, mask = heaptype(buf, ht, end)
        return pos, mask | (non_null(buf[ht]) if t == REF_HT else 0)
    mask = _VT[t]
    if mask < 0:
        if packed and t in (I8, I16):
            return pos + 1, 0
        raise Bounds(f"unknown value type 0x{t:02x} at offset {pos}")
    return pos + 1, mask


def count_mask(counts: Counter[str], mask: int) -> None:
    """Count each family of ``mask`` once."""
    while mask:
        low = mask & -mask
        counts[FAMILIES[low.bit_length() - 1]] += 1
        mask ^= low


# --- the cheap pass: bodies and their locals ---------------------------------------------------


@dataclass
class LocalScan:
    """What the cheap pass saw: local declarations per value type and body extents."""

    functions: int = 0
    v128_locals: int = 0  # number of local *declarations* (runs) of type v128
    exnref_locals: int = 0
    bodies: list[tuple[int, int]] = field(default_factory=list)  # (start of locals, end)


def scan_locals(buf: Buffer, start: int, end: int, keep_bodies: bool) -> LocalScan:
    """Walk the code section's bodies, reading only their local declarations: in C
    (``_scan.wasm_locals``) when it reads the section to its end, else ``scan_locals_py``,
    which says what is wrong."""
    fast = hotloops.scan.wasm_locals(buf, start, end)
    if fast is None:
        return scan_locals_py(buf, start, end, keep_bodies)
    functions, v128, exnref, bodies = fast
    return LocalScan(functions, v128, exnref, bodies if keep_bodies else [])


def _skip_valtype(buf: Buffer, pos: int, end: int) -> int:
    """Skip one value type; ``(ref null? ht)`` carries a heap type (an SLEB). The cheap pass
    only: the decode reads every type (``valtype``)."""
    if pos >= end:
        raise Truncated(f"value type at offset {pos} runs past the end {end}")
    t = buf[pos]
    if t in (REF_NULL_HT, REF_HT):
        return skip_leb(buf, pos + 1, end)
    return pos + 1


def scan_locals_py(buf: Buffer, start: int, end: int, keep_bodies: bool) -> LocalScan:
    """``scan_locals`` in Python, the reference the C loop is held to.

    The hot path (18k bodies in 28 MB) inlines one-byte LEBs; longer ones go through ``uleb``.
    """
    out = LocalScan()
    bodies = out.bodies
    v128 = exnref = 0
    count, pos = uleb(buf, start, end)
    for _ in range(count):
        if pos >= end:
            raise Truncated(f"function body size at offset {pos} runs past the code section")
        size = buf[pos]
        if size < 0x80:
            pos += 1
        else:
            size, pos = uleb(buf, pos, end)
        body_end = pos + size
        if size == 0 or body_end > end:
            raise Truncated(f"function body at offset {pos} (+{size}) does not fit the section")
        ndecl = buf[pos]
        if ndecl < 0x80:
            p = pos + 1
        else:
            ndecl, p = uleb(buf, pos, body_end)
            if ndecl > size:
                raise Truncated(f"function body at offset {pos} declares {ndecl} local runs")
        for _ in range(ndecl):
            p = skip_leb(buf, p, body_end)
            if p >= body_end:
                raise Truncated(f"local declaration at offset {p} runs past its body")
            t = buf[p]
            if t == V128:
                v128 += 1
            elif t == EXNREF:
                exnref += 1
            p = _skip_valtype(buf, p, body_end)
        if keep_bodies:
            bodies.append((pos, body_end))
        pos = body_end
    if pos != end:
        raise Truncated(f"code section has {end - pos} bytes after its {count} bodies")
    out.functions = count
    out.v128_locals = v128
    out.exnref_locals = exnref
    return out


# --- the opcode table (§5.4) -------------------------------------------------------------------

# Immediate shapes, small ints so that the C decode can switch on them (_scan.c: enum S_*).
(NONE, LEB, LEB2, BLOCK, MEMARG, F32, F64, BRTABLE, SELECT_T, HEAPTYPE, TRY_TABLE,
 MEMARG_LANE, LANE, V128_CONST, CALL_INDIRECT, MEMIDX, CAST) = range(17)
UNKNOWN = 255  # no instruction (the C tables' filler)


@dataclass(frozen=True, slots=True)
class Op:
    """One instruction: its immediates, the families it counts for (``FAMILY_FEATURES`` names
    their features) and how it changes the block depth (``end``, 0x0B, apart)."""

    shape: int
    families: tuple[str, ...] = ()
    depth: int = 0


def _single() -> dict[int, Op]:
    ops: dict[int, Op] = {}

    def put(codes: range | tuple[int, ...], op: Op) -> None:
        for c in codes:
            ops[c] = op

    eh, exn, ref, tfr = ("eh_legacy",), ("eh_exnref",), ("reference_types",), ("typed_funcref",)
    put((0x00, 0x01, 0x05, 0x0F, 0x1A, 0x1B), Op(NONE))  # unreachable nop else return drop select
    put((0x02, 0x03, 0x04), Op(BLOCK, depth=1))  # block loop if
    put((0x06,), Op(BLOCK, eh, depth=1))  # try
    put((0x07, 0x09), Op(LEB, eh))  # catch x, rethrow l
    put((0x08,), Op(LEB, ("eh_throw",)))  # throw x: the same in both encodings
    put((0x0A,), Op(NONE, exn))  # throw_ref
    put((0x0C, 0x0D, 0x10), Op(LEB))  # br l, br_if l, call x
    put((0x0E,), Op(BRTABLE))  # br_table l* l
    put((0x11,), Op(CALL_INDIRECT))  # call_indirect y x
    put((0x12,), Op(LEB, ("tail_call",)))  # return_call x
    put((0x13,), Op(CALL_INDIRECT, ("tail_call",)))  # return_call_indirect y x
    put((0x14,), Op(LEB, tfr))  # call_ref y
    put((0x15,), Op(LEB, tfr))  # return_call_ref y: typed function references' own (the
    # validator asks for no tail-call proposal beside)
    put((0x18,), Op(LEB, eh, depth=-1))  # delegate l: closes its try
    put((0x19,), Op(NONE, eh))  # catch_all
    put((0x1C,), Op(SELECT_T, ref))  # select t*
    put((0x1F,), Op(TRY_TABLE, exn, depth=1))  # try_table bt catch*
    put(range(0x20, 0x25), Op(LEB))  # local.get/set/tee, global.get/set
    put((0x25, 0x26), Op(LEB, ref))  # table.get x, table.set x
    put(range(0x28, 0x3F), Op(MEMARG))  # loads and stores
    put((0x3F, 0x40), Op(MEMIDX))  # memory.size x, memory.grow x
    put((0x41, 0x42), Op(LEB))  # i32.const, i64.const
    put((0x43,), Op(F32))
    put((0x44,), Op(F64))
    put(range(0x45, 0xC0), Op(NONE))  # numeric
    put(range(0xC0, 0xC5), Op(NONE, ("sign_ext",)))  # i32.extend8_s … i64.extend32_s
    put((0xD0,), Op(HEAPTYPE, ref))  # ref.null ht
    put((0xD1,), Op(NONE, ref))  # ref.is_null
    put((0xD2,), Op(LEB, ref))  # ref.func x
    put((0xD3,), Op(NONE, ("gc",)))  # ref.eq
    put((0xD4,), Op(NONE, tfr))  # ref.as_non_null
    put((0xD5, 0xD6), Op(LEB, tfr))  # br_on_null l, br_on_non_null l
    return ops


def _gc() -> dict[int, Op]:
    """0xFB: GC (§5.4.6 aggregate and reference instructions)."""
    g = ("gc",)
    ops = {sub: Op(LEB, g) for sub in (0, 1, 6, 7, 11, 12, 13, 14, 16)}
    # struct.new/new_default, array.new/new_default, array.get/get_s/get_u/set, array.fill
    ops.update({sub: Op(LEB2, g) for sub in (2, 3, 4, 5, 8, 9, 10, 17, 18, 19)})
    # struct.get/get_s/get_u/set, array.new_fixed/new_data/new_elem, array.copy/init_data/_elem
    ops[15] = Op(NONE, g)  # array.len
    ops.update({sub: Op(HEAPTYPE, g) for sub in (20, 21, 22, 23)})  # ref.test, ref.cast
    ops[24] = ops[25] = Op(CAST, g)  # br_on_cast, br_on_cast_fail
    ops.update({sub: Op(NONE, g) for sub in range(26, 31)})
    # any.convert_extern, extern.convert_any, ref.i31, i31.get_s, i31.get_u
    return ops


def _misc() -> dict[int, Op]:
    """0xFC: saturating truncation 0..7, bulk memory 8..14, table operations 15..17, and wide
    arithmetic 19..22 (i64.add128, i64.sub128, i64.mul_wide_s/u: not in 3.0, but LLVM's
    ``wide-arithmetic`` feature and on in wasm-tools' defaults)."""
    ops = {sub: Op(NONE, ("sat_trunc",)) for sub in range(8)}
    bulk = ("bulk_memory",)
    ops.update({8: Op(LEB2, bulk), 9: Op(LEB, bulk), 10: Op(LEB2, bulk), 11: Op(LEB, bulk),
                12: Op(LEB2, bulk), 13: Op(LEB, bulk), 14: Op(LEB2, bulk)})
    # memory.init d x, data.drop d, memory.copy x y, memory.fill x, table.init e x,
    # elem.drop e, table.copy x y
    ops.update({sub: Op(LEB, ("reference_types",)) for sub in (15, 16, 17)})
    # table.grow, table.size, table.fill
    ops.update({sub: Op(NONE, ("wide_arith",)) for sub in range(0x13, 0x17)})
    return ops


# The final SIMD page has no instruction at these sub-opcodes (wasmparser's visit_0xfd_operator)
SIMD_GAPS = frozenset({0x9A, 0xA2, 0xA5, 0xA6, 0xAF, 0xB0, 0xB2, 0xB3, 0xB4, 0xBB, 0xC2, 0xC5,
                       0xC6, 0xCF, 0xD0, 0xD2, 0xD3, 0xD4, 0xE2, 0xEE})
# clang/LLVM 14 put relaxed SIMD in some of them (verified with `clang --target=wasm32
# -msimd128 -mrelaxed-simd` + llvm-objdump: relaxed_swizzle a2, trunc a5 a6 c5 c6, fma/fms af
# b0 cf d0, laneselect b2 b3 d2 d3, relaxed_min/max b4 e2 d4 ee). The final encoding is
# 0x100..0x113.
RELAXED_PRESTANDARD = frozenset({0xA2, 0xA5, 0xA6, 0xAF, 0xB0, 0xB2, 0xB3, 0xB4, 0xC5, 0xC6,
                                 0xCF, 0xD0, 0xD2, 0xD3, 0xD4, 0xE2, 0xEE})
RELAXED_FINAL = range(0x100, 0x114)


def _simd() -> dict[int, Op]:
    """0xFD: SIMD (§5.4.8) and relaxed SIMD."""
    s, r = ("simd",), ("relaxed_simd",)
    ops = {sub: Op(NONE, s) for sub in range(0x0E, 0x100) if sub not in SIMD_GAPS}
    ops.update({sub: Op(MEMARG, s) for sub in (*range(0x0C), 0x5C, 0x5D)})  # loads, store
    ops[0x0C] = ops[0x0D] = Op(V128_CONST, s)  # v128.const, i8x16.shuffle: 16 bytes
    ops.update({sub: Op(LANE, s) for sub in range(0x15, 0x23)})  # extract/replace_lane
    ops.update({sub: Op(MEMARG_LANE, s) for sub in range(0x54, 0x5C)})  # load/store_lane
    ops.update({sub: Op(NONE, r) for sub in (*RELAXED_FINAL, *RELAXED_PRESTANDARD)})
    return ops


def _atomics() -> dict[int, Op]:
    """0xFE: threads: notify, wait32, wait64, fence (a zero byte), loads, stores, RMW."""
    a = ("atomics",)
    ops = {sub: Op(MEMARG, a) for sub in (0, 1, 2, *range(0x10, 0x4F))}
    ops[3] = Op(LANE, a)  # atomic.fence 0x00
    return ops


OPS: dict[int, Op] = _single()
PREFIXED: dict[int, dict[int, Op]] = {0xFB: _gc(), 0xFC: _misc(), 0xFD: _simd(),
                                      0xFE: _atomics()}
_SINGLE: list[Op | None] = [OPS.get(op) for op in range(256)]
_PAGES: dict[int, list[Op | None]] = {
    p: [ops.get(sub) for sub in range(max(ops) + 1)] for p, ops in PREFIXED.items()}
# The arithmetic extended-const allows in constant expressions (i32/i64 add, sub, mul).
EXTENDED_CONST_OPS = frozenset({0x6A, 0x6B, 0x6C, 0x7C, 0x7D, 0x7E})


def describe(op: int, sub: int | None = None) -> str:
    return f"0x{op:02x}" if sub is None else f"0x{op:02x} 0x{sub:x}"


# --- the decode --------------------------------------------------------------------------------


def _memarg(buf: Buffer, pos: int, end: int, counts: Counter[str]) -> int:
    align, pos = uleb(buf, pos, end)
    if align & 0x40:  # multi-memory: a memory index follows the alignment
        counts["multimemory"] += 1
        pos = skip_leb(buf, pos, end)
    return skip_leb(buf, pos, end)


def blocktype(buf: Buffer, pos: int, end: int, counts: Counter[str]) -> int:
    """Empty (0x40), a value type, or a type index (a non-negative s33: multi-value)."""
    if pos >= end:
        raise Truncated(f"block type at offset {pos} runs past its body")
    b = buf[pos]
    if b == 0x40:
        return pos + 1
    if 0x40 < b < 0x80:  # a negative one-byte s33: a value type
        pos, mask = valtype(buf, pos, end)
        count_mask(counts, mask)
        return pos
    start = pos
    pos = skip_leb(buf, pos, end)
    if buf[pos - 1] & 0x40:
        raise Bounds(f"unknown block type at offset {start}")
    counts["multivalue"] += 1
    return pos


def _fixed(pos: int, n: int, end: int, what: str) -> int:
    if pos + n > end:
        raise Truncated(f"{what} at offset {pos} runs past its body end {end}")
    return pos + n


def _immediates(shape: int, buf: Buffer, pos: int, end: int, counts: Counter[str]) -> int:
    """The position after the immediates of an instruction of ``shape``, counting the value
    types they name."""
    if shape == NONE:
        return pos
    if shape == LEB:
        return skip_leb(buf, pos, end)
    if shape == MEMARG:
        return _memarg(buf, pos, end, counts)
    if shape == BLOCK:
        return blocktype(buf, pos, end, counts)
    if shape == LEB2:
        return skip_leb(buf, skip_leb(buf, pos, end), end)
    if shape == CALL_INDIRECT:  # a type index, then the table: one 0x00 byte before 2.0
        pos = skip_leb(buf, pos, end)
        if pos < end and buf[pos] != 0:
            counts["overlong_table"] += 1
        return skip_leb(buf, pos, end)
    if shape == MEMIDX:  # memory.size/grow: one 0x00 byte without multi-memory
        if pos < end and buf[pos] != 0:
            counts["multimemory"] += 1
        return skip_leb(buf, pos, end)
    if shape == F32:
        return _fixed(pos, 4, end, "f32.const")
    if shape == F64:
        return _fixed(pos, 8, end, "f64.const")
    if shape == V128_CONST:
        return _fixed(pos, 16, end, "16-byte immediate")
    if shape == LANE:
        return _fixed(pos, 1, end, "lane index")
    if shape == MEMARG_LANE:
        return _fixed(_memarg(buf, pos, end, counts), 1, end, "lane index")
    if shape == HEAPTYPE:
        pos, mask = heaptype(buf, pos, end)
        count_mask(counts, mask)
        return pos
    if shape == BRTABLE:
        n, pos = uleb(buf, pos, end)
        if n > end - pos:
            raise Truncated(f"br_table at offset {pos} lists {n} labels")
        for _ in range(n + 1):
            pos = skip_leb(buf, pos, end)
        return pos
    if shape == SELECT_T:
        n, pos = uleb(buf, pos, end)
        if n > end - pos:
            raise Truncated(f"select at offset {pos} lists {n} types")
        for _ in range(n):
            pos, mask = valtype(buf, pos, end)
            count_mask(counts, mask)
        return pos
    if shape == CAST:  # cast flags (bit 0: the source nullable, bit 1: the target), l, ht, ht
        if pos >= end:
            raise Truncated(f"cast flags at offset {pos} run past the body")
        flags = buf[pos]
        if flags > 3:
            raise Bounds(f"cast flags 0x{flags:02x} at offset {pos}")
        pos = skip_leb(buf, pos + 1, end)
        for nullable in (flags & 1, flags & 2):
            ht = pos
            pos, mask = heaptype(buf, pos, end)
            count_mask(counts, mask | (0 if nullable else non_null(buf[ht])))
        return pos
    # TRY_TABLE: a block type, then the catch clauses
    pos = blocktype(buf, pos, end, counts)
    n, pos = uleb(buf, pos, end)
    if n > end - pos:
        raise Truncated(f"try_table at offset {pos} lists {n} catches")
    for _ in range(n):
        if pos >= end:
            raise Truncated(f"try_table catch at offset {pos} runs past its body")
        kind = buf[pos]
        pos += 1
        if kind in (0, 1):
            pos = skip_leb(buf, pos, end)  # tag
        elif kind not in (2, 3):
            raise Bounds(f"try_table catch kind {kind} at offset {pos - 1}")
        pos = skip_leb(buf, pos, end)  # label
    return pos


def _prefixed(op: int, buf: Buffer, pos: int, end: int, counts: Counter[str]) -> int:
    at = pos - 1
    sub, pos = uleb(buf, pos, end)
    page = _PAGES[op]
    entry = page[sub] if sub < len(page) else None
    if entry is None:
        raise Bounds(f"unknown opcode {describe(op, sub)} at offset {at} (not a WebAssembly "
                     "3.0 instruction)")
    pos = _immediates(entry.shape, buf, pos, end, counts)
    for family in entry.families:
        counts[family] += 1
    return pos


def decode_expr(buf: Buffer, pos: int, end: int, counts: Counter[str],
                ops: set[int] | None = None, globals_read: list[int] | None = None) -> int:
    """Decode instructions from ``pos`` up to the ``end`` that closes the expression, counting
    families; the position after that ``end``. ``ops``, when given, collects the single-byte
    opcodes seen and ``globals_read`` the indices ``global.get`` reads (what a constant
    expression needs depends on them)."""
    depth = 0
    single = _SINGLE
    while pos < end:
        op = buf[pos]
        pos += 1
        if op == 0x0B:
            if depth == 0:
                return pos
            depth -= 1
            continue
        if ops is not None:
            ops.add(op)
            if op == 0x23 and globals_read is not None:
                globals_read.append(uleb(buf, pos, end)[0])
        entry = single[op]
        if entry is not None:
            pos = _immediates(entry.shape, buf, pos, end, counts)
            depth += entry.depth
            for family in entry.families:
                counts[family] += 1
            continue
        if op in _PAGES:
            pos = _prefixed(op, buf, pos, end, counts)
        else:
            raise Bounds(f"unknown opcode {describe(op)} at offset {pos - 1} (not a "
                         "WebAssembly 3.0 instruction)")
    raise Bounds(f"expression ending at {end} has no final `end` (or an immediate overran it)")


def decode_locals(buf: Buffer, pos: int, end: int, counts: Counter[str]) -> int:
    """A body's local declarations, each run's type counted once; the position after them."""
    ndecl, pos = uleb(buf, pos, end)
    if ndecl > end - pos:
        raise Truncated(f"function body at offset {pos} declares {ndecl} local runs")
    for _ in range(ndecl):
        pos = skip_leb(buf, pos, end)
        pos, mask = valtype(buf, pos, end)
        count_mask(counts, mask)
    return pos


def decode_body(buf: Buffer, pos: int, end: int, counts: Counter[str]) -> None:
    """Decode one function body (locals first) and count its families.

    Raises ``Bounds`` unless the final ``end`` of the body is its last byte.
    """
    pos = decode_locals(buf, pos, end, counts)
    pos = decode_expr(buf, pos, end, counts)
    if pos != end:
        raise Bounds(f"function body ends at offset {pos}, {end - pos} bytes early")


@dataclass
class DeepScan:
    """Per-family counts of every decoded body (``Counter`` keys: ``FAMILIES``)."""

    counts: Counter[str] = field(default_factory=Counter)
    functions: int = 0
    bytes_decoded: int = 0

    def features(self) -> dict[str, list[str]]:
        """Each feature the code needs -> the families that need it."""
        out: dict[str, list[str]] = {}
        for fam in FAMILIES:
            if self.counts.get(fam):
                for feat in FAMILY_FEATURES[fam]:
                    out.setdefault(feat, []).append(fam)
        return out


def _words(values: list[int]) -> bytes:
    return b"".join((v & 0xFFFFFFFF).to_bytes(4, "little") for v in values)


TypeTables = tuple[bytes, bytes, tuple[int, int, int, int, int]]


@functools.cache
def type_tables() -> TypeTables:
    """What the C loops classify value types with, made from ``valtype_masks`` and
    ``heap_masks``: each first byte's families as a 32-bit little-endian mask (0xFFFFFFFF:
    none), and the bits of the families the C sets itself (``reftype``, ``typed_ref``,
    ``multivalue``, ``multimemory``, ``overlong_table``)."""
    bits = (BIT["reftype"], BIT["typed_ref"], BIT["multivalue"], BIT["multimemory"],
            BIT["overlong_table"])
    return _words(valtype_masks()), _words(heap_masks()), bits


@functools.cache
def deep_tables() -> tuple[tuple[bytes, bytes, bytes], tuple[tuple[bytes, bytes], ...],
                           TypeTables]:
    """The tables the C decode (``_scan.wasm_deep_scan``) is given, all made from ``OPS`` and
    ``PREFIXED``: for the single-byte opcodes each one's immediate shape (``UNKNOWN``: no
    instruction), its families as a 32-bit mask (little-endian) and its depth change (a
    signed byte); for each page 0xFB..0xFE the same shapes and masks by sub-opcode; and
    ``type_tables``."""

    def shapes(ops: list[Op | None]) -> bytes:
        return bytes(UNKNOWN if o is None else o.shape for o in ops)

    def masks(ops: list[Op | None]) -> bytes:
        return b"".join(sum(BIT[f] for f in (o.families if o else ())).to_bytes(4, "little")
                        for o in ops)

    single = (shapes(_SINGLE), masks(_SINGLE),
              bytes((o.depth if o else 0) & 0xFF for o in _SINGLE))
    pages = tuple((shapes(_PAGES[p]), masks(_PAGES[p])) for p in (0xFB, 0xFC, 0xFD, 0xFE))
    return single, pages, type_tables()


def decode_bodies(buf: Buffer, bodies: list[tuple[int, int]]) -> DeepScan:
    """Decode every body; a body that does not decode to exactly its size raises ``Bounds``.

    The C loop answers for all of them, or names the first body it cannot read; only that
    body is decoded again here, to say where and why (the reference agrees with the C, so it
    raises; were it to read the body, the whole section is decoded here instead: the facts
    are then the reference's)."""
    fast = hotloops.scan.wasm_deep_scan(buf, bodies, *deep_tables())
    if fast is None:  # no C loop
        return decode_bodies_py(buf, bodies)
    if isinstance(fast, int):
        start, end = bodies[fast]
        try:
            decode_body(buf, start, end, Counter())
        except IndexError:
            raise Truncated(f"function body at offset {start} runs past the data") from None
        return decode_bodies_py(buf, bodies)
    out = DeepScan(functions=len(bodies), bytes_decoded=sum(e - s for s, e in bodies))
    out.counts.update({f: n for f, n in zip(FAMILIES, fast, strict=False) if n})
    return out


def decode_bodies_py(buf: Buffer, bodies: list[tuple[int, int]]) -> DeepScan:
    """``decode_bodies`` in Python: the reference the C loop is held to, and the one that
    words a body's error."""
    out = DeepScan()
    counts = out.counts
    for start, end in bodies:
        try:
            decode_body(buf, start, end, counts)
        except IndexError:
            raise Truncated(f"function body at offset {start} runs past the data") from None
        out.functions += 1
        out.bytes_decoded += end - start
    return out
