"""WebAssembly code-section scans: the cheap local-declaration walk and the full opcode decode.

Spec: the WebAssembly core specification (binary format, §5.4 instructions) plus the proposals
Emscripten/LLVM emit: sign-extension, non-trapping float-to-int, bulk memory, reference types,
SIMD (incl. LLVM 14's pre-standard relaxed-SIMD opcodes), threads/atomics, tail calls, typed
function references, legacy exception handling (try/catch/delegate) and the exnref encoding
(``try_table``/``throw_ref``). docs/binary-formats.md §3.6 lists the families and how they were
verified.

Why three passes: Emscripten release modules carry no ``target_features`` section, so SIMD,
atomics and the EH encoding are only visible in the instructions. The cheap pass reads only each
body's local declarations (``v128``/``exnref`` locals are conclusive hits, < 0.1 s on 28 MB); the
deep pass decodes every instruction and counts every family, and is opt-in
(``ParseOptions.deep``). The EH encoding cannot wait for it (both encodings declare the same
feature), so ``eh_scan`` decodes every instruction on the default path too. Both run in C
(``_scan``: the flagship's 68 MB archive in well under a second) and fall back to the Python
here (a few MB/s; ``eh_scan`` lets a regular expression consume the instructions that say
nothing about exceptions), which is the reference the C is held to and the one that says what
is wrong with a body. All verify that every body is consumed exactly, so a wrong immediate table
cannot go unnoticed.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from dataclasses import dataclass, field

from prebake.inspect import hotloops
from prebake.inspect.binreader import Buffer, Truncated

V128 = 0x7B
EXNREF = 0x69
REF_NULL_HT = 0x63  # (ref null ht)
REF_HT = 0x64  # (ref ht)

# clang/LLVM 14 encodes relaxed SIMD with pre-standard 0xFD sub-opcodes in gaps of the final
# SIMD table (verified with `clang --target=wasm32 -msimd128 -mrelaxed-simd` + llvm-objdump:
# relaxed_swizzle a2, trunc a5 a6 c5 c6, fma/fms af b0 cf d0, laneselect b2 b3 d2 d3,
# relaxed_min/max b4 e2 d4 ee). The standardised proposal uses 0x100..0x113.
RELAXED_PRESTANDARD = frozenset(
    {0xA2, 0xA5, 0xA6, 0xAF, 0xB0, 0xB2, 0xB3, 0xB4, 0xC5, 0xC6, 0xCF, 0xD0, 0xD2, 0xD3, 0xD4,
     0xE2, 0xEE}
)
RELAXED_FINAL = range(0x100, 0x114)

# Feature names (LLVM's target_features spelling) for the families the deep decode counts.
FAMILY_FEATURE = {
    "simd": "simd128",
    "relaxed_simd": "relaxed-simd",
    "atomics": "atomics",
    "bulk_memory": "bulk-memory",
    "sat_trunc": "nontrapping-fptoint",
    "sign_ext": "sign-ext",
    "eh_legacy": "exception-handling",
    "eh_exnref": "exception-handling",
    "eh_throw": "exception-handling",
    "tail_call": "tail-call",
    "reference_types": "reference-types",
    "typed_funcref": "reference-types",
}


class Bounds(Truncated):
    """A body did not decode to exactly its declared size (a bug or a corrupt file)."""


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


def skip_valtype(buf: Buffer, pos: int, end: int) -> int:
    """Skip one value type; ``(ref null? ht)`` carries a heap type (an SLEB)."""
    if pos >= end:
        raise Truncated(f"value type at offset {pos} runs past the end {end}")
    t = buf[pos]
    if t in (REF_NULL_HT, REF_HT):
        return skip_leb(buf, pos + 1, end)
    return pos + 1


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
            p = skip_valtype(buf, p, body_end)
        if keep_bodies:
            bodies.append((pos, body_end))
        pos = body_end
    if pos != end:
        raise Truncated(f"code section has {end - pos} bytes after its {count} bodies")
    out.functions = count
    out.v128_locals = v128
    out.exnref_locals = exnref
    return out


# --- the deep decode ---------------------------------------------------------------------------

# Immediate shapes, as small ints so the hot loop is a dict lookup and a few comparisons.
_NONE, _IDX, _IDX2, _BLOCK, _MEMARG, _I32, _I64, _F32, _F64, _BRTABLE, _SELECT_T, _HEAPTYPE, \
    _TRY_TABLE, _MEMIDX = range(14)


@dataclass(frozen=True, slots=True)
class Op:
    """One single-byte opcode: its immediates, the families it counts for (``FAMILY_FEATURE``
    names their features) and how it changes the block depth (``end`` is 0x0B, apart)."""

    shape: int
    families: tuple[str, ...] = ()
    depth: int = 0


_EH, _EXN, _TAIL, _REF, _FUNCREF = ("eh_legacy",), ("eh_exnref",), ("tail_call",), \
    ("reference_types",), ("typed_funcref",)
OPS: dict[int, Op] = {}
for _op in (0x00, 0x01, 0x05, 0x0F, 0x1A, 0x1B, *range(0x45, 0xC0)):  # MVP, numeric
    OPS[_op] = Op(_NONE)
for _op in range(0xC0, 0xC5):  # i32.extend8_s … i64.extend32_s
    OPS[_op] = Op(_NONE, ("sign_ext",))
OPS[0x19] = Op(_NONE, _EH)  # catch_all
OPS[0x0A] = Op(_NONE, _EXN)  # throw_ref
OPS[0xD1] = OPS[0xD3] = Op(_NONE, _REF)  # ref.is_null, ref.as_non_null
for _op in (0x02, 0x03, 0x04):  # block, loop, if
    OPS[_op] = Op(_BLOCK, depth=1)
OPS[0x06] = Op(_BLOCK, _EH, depth=1)  # try
for _op in (0x0C, 0x0D, 0x10, 0x20, 0x21, 0x22, 0x23, 0x24):  # br, br_if, call, locals, globals
    OPS[_op] = Op(_IDX)
OPS[0x07] = OPS[0x09] = Op(_IDX, _EH)  # catch, rethrow
OPS[0x08] = Op(_IDX, ("eh_throw",))  # throw
OPS[0x18] = Op(_IDX, _EH, depth=-1)  # delegate closes its try
OPS[0x12] = Op(_IDX, _TAIL)  # return_call
OPS[0x14] = OPS[0xD4] = OPS[0xD6] = Op(_IDX, _FUNCREF)  # call_ref, br_on_null, br_on_non_null
OPS[0x15] = Op(_IDX, ("typed_funcref", "tail_call"))  # return_call_ref
OPS[0x25] = OPS[0x26] = OPS[0xD2] = Op(_IDX, _REF)  # table.get, table.set, ref.func
OPS[0x11] = Op(_IDX2)  # call_indirect
OPS[0x13] = Op(_IDX2, _TAIL)  # return_call_indirect
for _op in range(0x28, 0x3F):  # loads and stores
    OPS[_op] = Op(_MEMARG)
OPS[0x3F] = OPS[0x40] = Op(_MEMIDX)  # memory.size, memory.grow
OPS[0x41] = Op(_I32)
OPS[0x42] = Op(_I64)
OPS[0x43] = Op(_F32)
OPS[0x44] = Op(_F64)
OPS[0x0E] = Op(_BRTABLE)
OPS[0x1C] = Op(_SELECT_T, _REF)  # select with types
OPS[0xD0] = Op(_HEAPTYPE, _REF)  # ref.null
OPS[0x1F] = Op(_TRY_TABLE, _EXN, depth=1)

# 0xFC: 0..7 saturating truncation (no immediates); 8..17 bulk memory / table ops.
_FC_IMM = {8: 2, 9: 1, 10: 2, 11: 1, 12: 2, 13: 1, 14: 2, 15: 1, 16: 1, 17: 1}


def _simd_family(sub: int) -> str:
    if sub in RELAXED_FINAL or sub in RELAXED_PRESTANDARD:
        return "relaxed_simd"
    return "simd"


def _fc_family(sub: int) -> str:
    """0xFC 0..7 saturating truncation, 8..11 bulk memory, 12..17 table operations."""
    return "sat_trunc" if sub <= 7 else "bulk_memory" if sub <= 11 else "reference_types"


@dataclass
class DeepScan:
    """Per-family instruction counts of every decoded body (``Counter`` keys below)."""

    counts: Counter[str] = field(default_factory=Counter)
    functions: int = 0
    bytes_decoded: int = 0

    def features(self) -> list[str]:
        return sorted({FAMILY_FEATURE[k] for k, v in self.counts.items()
                       if v and k in FAMILY_FEATURE})


def _memarg(buf: bytes, pos: int, end: int) -> int:
    align, pos = uleb(buf, pos, end)
    if align & 0x40:  # multi-memory: a memory index follows the alignment
        pos = skip_leb(buf, pos, end)
    return skip_leb(buf, pos, end)


def _blocktype(buf: bytes, pos: int, end: int) -> int:
    if pos >= end:
        raise Truncated(f"block type at offset {pos} runs past its body")
    b = buf[pos]
    if b in (REF_NULL_HT, REF_HT):
        return skip_leb(buf, pos + 1, end)
    if 0x40 <= b <= 0x7F:  # empty (0x40) or a one-byte value type (negative as an s33)
        return pos + 1
    return skip_leb(buf, pos, end)  # a type index (a non-negative s33)


def _immediates(shape: int, buf: bytes, pos: int, end: int) -> int:
    """The position after the immediates of an instruction of ``shape``."""
    if shape == _NONE:
        return pos
    if shape in (_IDX, _I32, _I64, _MEMIDX, _HEAPTYPE):
        return skip_leb(buf, pos, end)
    if shape == _MEMARG:
        return _memarg(buf, pos, end)
    if shape == _BLOCK:
        return _blocktype(buf, pos, end)
    if shape == _IDX2:
        return skip_leb(buf, skip_leb(buf, pos, end), end)
    if shape == _F32:
        return pos + 4
    if shape == _F64:
        return pos + 8
    if shape == _BRTABLE:
        n, pos = uleb(buf, pos, end)
        if n > end - pos:
            raise Truncated(f"br_table at offset {pos} lists {n} labels")
        for _ in range(n + 1):
            pos = skip_leb(buf, pos, end)
        return pos
    if shape == _SELECT_T:
        n, pos = uleb(buf, pos, end)
        if n > end - pos:
            raise Truncated(f"select at offset {pos} lists {n} types")
        for _ in range(n):
            pos = skip_valtype(buf, pos, end)
        return pos
    # _TRY_TABLE: a block type, then the catch clauses
    pos = _blocktype(buf, pos, end)
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
            raise Truncated(f"try_table catch kind {kind} at offset {pos - 1}")
        pos = skip_leb(buf, pos, end)  # label
    return pos


def decode_body(buf: bytes, pos: int, end: int, counts: Counter[str]) -> None:
    """Decode one function body (locals first) and count instruction families.

    Raises ``Bounds`` unless the final ``end`` of the body is its last byte.
    """
    ndecl, pos = uleb(buf, pos, end)
    for _ in range(ndecl):
        pos = skip_leb(buf, pos, end)
        pos = skip_valtype(buf, pos, end)
    depth = 0
    ops = OPS
    while pos < end:
        op = buf[pos]
        pos += 1
        if op == 0x0B:
            if depth == 0:
                if pos != end:
                    raise Bounds(f"function body ends at offset {pos}, {end - pos} bytes early")
                return
            depth -= 1
            continue
        entry = ops.get(op)
        if entry is not None:
            pos = _immediates(entry.shape, buf, pos, end)
            depth += entry.depth
            for family in entry.families:
                counts[family] += 1
            continue
        if op in (0xFC, 0xFD, 0xFE):
            pos = _prefixed(op, buf, pos, end, counts)
        else:
            raise Bounds(f"unknown opcode 0x{op:02x} at offset {pos - 1}")
    raise Bounds(f"function body ending at {end} has no final `end` (or an immediate overran it)")


# The families the deep decode counts, in the order of the C loop's answer (``deep_tables``).
FAMILIES = ("simd", "relaxed_simd", "atomics", "bulk_memory", "sat_trunc", "sign_ext",
            "eh_legacy", "eh_exnref", "eh_throw", "tail_call", "reference_types", "typed_funcref")


@functools.cache
def deep_tables() -> tuple[bytes, bytes, bytes, bytes, bytes, int]:
    """The opcode tables the C decode (``_scan.wasm_deep_scan``) is given, made from ``OPS``,
    ``_simd_family`` and ``_fc_family``: each single-byte opcode's immediate shape (255: none of
    ``OPS``), its families as a 16-bit mask (little-endian), its depth change (a signed byte),
    the family of each 0xFD and 0xFC sub-opcode, and that of the atomics."""
    index = {f: i for i, f in enumerate(FAMILIES)}
    masks = b"".join(sum(1 << index[f] for f in OPS[op].families).to_bytes(2, "little")
                     if op in OPS else b"\0\0" for op in range(256))
    depths = bytes(OPS[op].depth & 0xFF if op in OPS else 0 for op in range(256))
    fd = bytes(index[_simd_family(sub)] for sub in range(0x114))
    fc = bytes(index[_fc_family(sub)] for sub in range(18))
    return C_SHAPES, masks, depths, fd, fc, index["atomics"]


def decode_bodies(buf: Buffer, bodies: list[tuple[int, int]]) -> DeepScan:
    """Decode every body; a body that does not decode to exactly its size raises ``Bounds``.

    The C loop answers when it reads every body (the flagship's 68 MB archive in a fraction of
    a second, against ~2.5 s here); when it cannot, ``decode_bodies_py`` decodes again and says
    where and why."""
    fast = hotloops.scan.wasm_deep_scan(buf, bodies, *deep_tables())
    if fast is None:
        return decode_bodies_py(buf, bodies)  # type: ignore[arg-type]
    out = DeepScan(functions=len(bodies), bytes_decoded=sum(e - s for s, e in bodies))
    out.counts.update({f: n for f, n in zip(FAMILIES, fast, strict=False) if n})
    return out


def decode_bodies_py(buf: bytes, bodies: list[tuple[int, int]]) -> DeepScan:
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


# --- the EH encoding on the default path -------------------------------------------------------
#
# Which encoding of native exceptions a body holds is a fact of every wasm file (docs/
# binary-formats.md §3.6), so it cannot wait for the deep decode. ``eh_scan`` decodes every
# instruction as exactly as ``decode_body`` does, but lets one regular expression (C speed in
# ``re``) consume runs of the instructions that say nothing about exceptions; every other
# instruction (blocks and ``end``, the EH opcodes, br_table, typed select, anything the
# expression does not spell) goes through ``_step``, the decoder's own Python.
# ``tests/unit/test_wasm_reader.py`` holds its counts to ``decode_bodies`` on real modules.

_RX_LEB = rb"[\x80-\xff]{0,9}[\x00-\x7f]"
_RX_MEMARG = (rb"(?:(?:[\x00-\x3f]|[\x80-\xbf]" + _RX_LEB + rb")" + _RX_LEB
           + rb"|(?:[\x40-\x7f]|[\xc0-\xff]" + _RX_LEB + rb")" + _RX_LEB + _RX_LEB + rb")")
# a block type that is not exnref: a value type, (ref null? ht) of another heap type, an index
_RX_BLOCKTYPE = (rb"(?:[\x40-\x62\x65-\x68\x6a-\x7f]|[\x63\x64](?!\x69)" + _RX_LEB
                 + rb"|[\x00-\x3f]|[\x80-\xff]{1,9}[\x00-\x7f])")
_RX_CATCH = rb"(?:[\x00\x01]" + _RX_LEB + _RX_LEB + rb"|[\x02\x03]" + _RX_LEB + rb")"
_PLAIN_ONE = b"|".join((
    rb"[\x00\x01\x05\x0f\x1a\x1b\x45-\xc4\xd1\xd3]",  # no immediates (not EH 0A/19)
    rb"[\x0c\x0d\x10\x12\x14\x15\x20-\x26\x3f-\x42\xd2\xd4\xd6]" + _RX_LEB,  # one LEB
    rb"\xd0(?!\x69)" + _RX_LEB,  # ref.null of any heap type but exn
    rb"[\x02-\x04]" + _RX_BLOCKTYPE,  # block, loop, if: not of exnref
    rb"\x0b",  # end
    rb"[\x28-\x3e]" + _RX_MEMARG,  # loads and stores
    rb"\x43.{4}|\x44.{8}",  # f32.const, f64.const
    rb"[\x11\x13]" + _RX_LEB + _RX_LEB,  # call_indirect, return_call_indirect
    rb"\xfc(?:[\x00-\x07]|[\x09\x0b\x0d\x0f\x10\x11]" + _RX_LEB + rb"|[\x08\x0a\x0c\x0e]" + _RX_LEB
    + _RX_LEB + rb")",  # saturating truncation, bulk memory, table ops
    rb"\xfd(?:[\x00-\x0b\x5c\x5d]" + _RX_MEMARG + rb"|[\x0c\x0d].{16}|[\x15-\x22].|[\x54-\x5b]"
    + _RX_MEMARG + rb".|[\x0e-\x14\x23-\x53\x5e-\x7f]|[\x80-\xff]\x01|[\x80-\x93]\x02)",  # SIMD
    rb"\xfe(?:\x03.|[\x00-\x02\x04-\x4e]" + _RX_MEMARG + rb")",  # atomics
))
# A run of plain instructions, then at most one EH instruction, its family the group that
# matched: the EH instructions of a body cost one match each, not a call of ``_step``.
_EH_GROUPS = (None, "eh_legacy", "eh_exnref", "exnref_type", "eh_throw")
_RUN_PATTERN = (
    rb"(?:" + _PLAIN_ONE + rb")*+(?:"
    + rb"(\x06" + _RX_BLOCKTYPE + rb"|[\x07\x09\x18]" + _RX_LEB + rb"|\x19)"  # legacy
    + rb"|(\x0a|\x1f" + _RX_BLOCKTYPE + rb"(?:\x00|\x01" + _RX_CATCH + rb"|\x02" + _RX_CATCH
    + rb"{2}|\x03" + _RX_CATCH + rb"{3}))"  # exnref: throw_ref, try_table with 0..3 catches
    + rb"|([\x02-\x04][\x63\x64]?\x69)"  # a block of type exnref
    + rb"|(\x08" + _RX_LEB + rb"))?")  # throw


@functools.cache
def _run() -> re.Pattern[bytes]:
    """The expression, compiled when the Python scan first runs (the C scan needs none; it
    takes a few hundredths of a second, which every ``prebake`` start would otherwise pay)."""
    return re.compile(_RUN_PATTERN, re.DOTALL)


@dataclass
class EhScan:
    """Instructions of each EH family in every body, and the exnref types seen among them."""

    legacy: int = 0  # try, catch, catch_all, delegate, rethrow
    exnref: int = 0  # try_table, throw_ref
    throw: int = 0  # throw: the same instruction in both encodings
    exnref_types: int = 0  # exnref block types and ref.null exn (locals: ``LocalScan``)


def _step(buf: bytes, pos: int, end: int, counts: Counter[str]) -> int:
    """Decode the instruction at ``pos``; the position after it."""
    op = buf[pos]
    pos += 1
    if op == 0x0B:
        return pos
    entry = OPS.get(op)
    if entry is not None:
        if _names_exnref(entry.shape, op, buf, pos, end):
            counts["exnref_type"] += 1
        pos = _immediates(entry.shape, buf, pos, end)
        for family in entry.families:
            counts[family] += 1
        return pos
    if op in (0xFD, 0xFC, 0xFE):
        return _prefixed(op, buf, pos, end, counts)
    raise Bounds(f"unknown opcode 0x{op:02x} at offset {pos - 1}")


def _names_exnref(shape: int, op: int, buf: Buffer, pos: int, end: int) -> bool:
    """Whether the immediates at ``pos`` name the exnref type: a block type, ``ref.null exn``
    or a typed ``select`` of it (bounds are ``_immediates``' to check; this only looks)."""
    if shape in (_BLOCK, _TRY_TABLE):
        return _exnref_at(buf, pos, end)
    if op == 0xD0:
        return pos < end and buf[pos] == EXNREF
    if shape == _SELECT_T:
        n, pos = uleb(buf, pos, end)
        for _ in range(min(n, end - pos)):
            if _exnref_at(buf, pos, end):
                return True
            pos = skip_valtype(buf, pos, end)
    return False


def _exnref_at(buf: Buffer, pos: int, end: int) -> bool:
    """A block type of exnref (0x69) or (ref null? exn) at ``pos``."""
    if pos >= end:
        return False
    b = buf[pos]
    return b == EXNREF or (b in (REF_NULL_HT, REF_HT) and pos + 1 < end
                           and buf[pos + 1] == EXNREF)


def _prefixed(op: int, buf: bytes, pos: int, end: int, counts: Counter[str]) -> int:
    """The 0xFD (SIMD), 0xFC and 0xFE (atomics) instructions: their immediates skipped and their
    family counted, for ``decode_body`` and the EH scan alike."""
    sub, pos = uleb(buf, pos, end)
    if op == 0xFD:
        if sub <= 0x0B or sub in (0x5C, 0x5D):
            pos = _memarg(buf, pos, end)
        elif sub in (0x0C, 0x0D):
            pos += 16
        elif 0x15 <= sub <= 0x22:
            pos += 1
        elif 0x54 <= sub <= 0x5B:
            pos = _memarg(buf, pos, end) + 1
        elif sub > 0x113:
            raise Bounds(f"unknown SIMD sub-opcode 0x{sub:x} at offset {pos}")
        counts[_simd_family(sub)] += 1
    elif op == 0xFC:
        if sub <= 7:
            counts[_fc_family(sub)] += 1
        elif sub <= 17:
            for _ in range(_FC_IMM[sub]):
                pos = skip_leb(buf, pos, end)
            counts[_fc_family(sub)] += 1
        else:
            raise Bounds(f"unknown 0xFC sub-opcode {sub} at offset {pos}")
    else:
        if sub == 0x03:  # atomic.fence takes one reserved byte
            pos += 1
        elif sub <= 0x4E:
            pos = _memarg(buf, pos, end)
        else:
            raise Bounds(f"unknown atomic sub-opcode 0x{sub:x} at offset {pos}")
        counts["atomics"] += 1
    return pos


def eh_body(buf: bytes, pos: int, end: int, counts: Counter[str]) -> None:
    """Decode one body (locals first) for its EH instructions; ``Bounds`` unless its
    instructions end exactly at its last byte, an ``end``. (The block nesting is the deep
    decode's to check: a miscount there cannot change which instructions the body holds.)"""
    ndecl, pos = uleb(buf, pos, end)
    for _ in range(ndecl):
        pos = skip_leb(buf, pos, end)
        pos = skip_valtype(buf, pos, end)
    last = end - 1
    run = _run().match
    groups = _EH_GROUPS
    while pos < last:
        m = run(buf, pos, last)
        if m is not None and m.end() > pos:
            pos = m.end()
            family = groups[m.lastindex or 0]
            if family is not None:
                counts[family] += 1
            continue
        pos = _step(buf, pos, end, counts)  # what the expressions do not spell
    if pos != last or buf[last] != 0x0B:
        raise Bounds(f"function body ending at {end} has no final `end` (or an immediate "
                     "overran it)")


# The opcode tables the C scan (``_scan.wasm_eh_scan``) is given: each single-byte opcode's
# immediate shape (255: none of ``OPS``) and EH family (1 legacy, 2 exnref, 3 throw), so that
# the instructions are known in one place, ``OPS``.
_EH_CODES = {"eh_legacy": 1, "eh_exnref": 2, "eh_throw": 3}
C_SHAPES = bytes(OPS[op].shape if op in OPS else 255 for op in range(256))
C_FAMILIES = bytes(next((_EH_CODES[f] for f in OPS[op].families if f in _EH_CODES), 0)
                   if op in OPS else 0 for op in range(256))


def eh_scan(buf: Buffer, bodies: list[tuple[int, int]]) -> EhScan:
    """The EH instructions of every body; a body that does not decode raises ``Bounds``.

    The C loop answers when it can read every body (a flagship archive's 68 MB in a tenth of a
    second); when it cannot, ``eh_scan_py`` decodes again and says where and why."""
    fast = hotloops.scan.wasm_eh_scan(buf, bodies, C_SHAPES, C_FAMILIES)
    if fast is not None:
        return EhScan(*fast)
    return eh_scan_py(buf, bodies)  # type: ignore[arg-type]


def eh_scan_py(buf: bytes, bodies: list[tuple[int, int]]) -> EhScan:
    """``eh_scan`` in Python: the reference the C loop is held to, and the one that words a
    body's error."""
    counts: Counter[str] = Counter()
    for start, end in bodies:
        try:
            eh_body(buf, start, end, counts)
        except IndexError:
            raise Truncated(f"function body at offset {start} runs past the data") from None
    return EhScan(counts["eh_legacy"], counts["eh_exnref"], counts["eh_throw"],
                  counts["exnref_type"])
