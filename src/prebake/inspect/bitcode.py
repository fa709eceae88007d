"""LLVM bitcode (``-flto`` objects), raw ``BC C0 DE`` or in the Darwin wrapper → ``Facts``.

Specs: LLVM's "LLVM Bitcode File Format" (the bitstream container: abbreviations, blocks,
records, blobs) and ``llvm/Object/IRSymtab.h`` (the symbol table LLVM writes next to the
module so linkers need not load it). docs/binary-formats.md §2 records what was verified with
``llvm-bcanalyzer``: thin vs full LTO from the MODULE block's summary sub-block (20 thin,
24 full), the irsymtab header layout and symbol flags.

Only top-level blocks and the MODULE block's own records are walked; every sub-block is
skipped by its word length, so function bodies are never decoded. Every read is checked
against the stream's end and every loop consumes input or is bounded, so hostile input ends
in ``Truncated``/``ValueError`` (a one-line ``FormatError``), never a hang or a huge list.
"""

from __future__ import annotations

import functools
import struct
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from prebake.inspect import magic, producer
from prebake.inspect.binreader import Buffer, Reader, Truncated
from prebake.inspect.facts import Facts, Symbols
from prebake.inspect.reader import ParseOptions

RAW_MAGIC = magic.BITCODE_RAW
WRAPPER_MAGIC = magic.BITCODE_WRAPPER
_CHAR6 = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._"


class Block(IntEnum):
    BLOCKINFO = 0
    MODULE = 8
    PARAMATTR_GROUP = 10  # attribute groups: "target-features", "target-cpu", …
    IDENTIFICATION = 13
    GLOBALVAL_SUMMARY = 20  # ThinLTO summary
    FULL_LTO_GLOBALVAL_SUMMARY = 24
    STRTAB = 23
    SYMTAB = 25


IDENTIFICATION_CODE_STRING = 1  # "LLVM14.0.6": the writer's name and release
MODULE_CODE_TRIPLE = 2
MODULE_CODE_SOURCE_FILENAME = 16
BLOB_RECORD = 1  # SYMTAB_BLOB / STRTAB_BLOB
PARAMATTR_GRP_CODE_ENTRY = 3  # [grpid, paramidx, (kind, attr…)…]
FUNCTION_ATTRS = 0xFFFFFFFF  # paramidx of a function's own attributes


class SymFlag(IntEnum):
    """irsymtab::Symbol::FlagBits (bit numbers)."""

    UNDEFINED = 3
    WEAK = 4
    COMMON = 5
    TLS = 8
    GLOBAL = 10
    EXECUTABLE = 13


IRSYMTAB_VERSION = 3


_WINDOW = 64  # bytes per window in ``Bits.skip_vbrs``


@functools.cache
def _high_bits(width: int) -> int:
    """Every chunk's continuation bit, for as many ``width``-bit chunks as a window holds."""
    return sum(1 << (i * width + width - 1) for i in range(_WINDOW * 8 // width))


class Bits:
    """A little-endian bit cursor over ``[start, end)`` bytes of a reader."""

    __slots__ = ("buf", "end", "pos")

    def __init__(self, r: Reader, start: int, end: int) -> None:
        r.check(start, end - start, "bitstream")
        self.buf = r.buf
        self.pos = start * 8
        self.end = end * 8

    def left(self) -> int:
        return self.end - self.pos

    def read(self, n: int) -> int:
        if n == 0:
            return 0
        if n > 64 or self.pos + n > self.end:
            raise Truncated(f"bitstream read of {n} bits at bit {self.pos} runs past {self.end}")
        first = self.pos >> 3
        last = (self.pos + n + 7) >> 3
        word = int.from_bytes(self.buf[first:last], "little")
        v = (word >> (self.pos & 7)) & ((1 << n) - 1)
        self.pos += n
        return v

    def vbr(self, n: int) -> int:
        if n < 2 or n > 32:
            raise ValueError(f"invalid VBR width {n}")
        hi = 1 << (n - 1)
        value = 0
        shift = 0
        while True:
            chunk = self.read(n)
            value |= (chunk & (hi - 1)) << shift
            if not chunk & hi:
                return value
            shift += n - 1
            if shift > 64:
                raise ValueError(f"VBR value longer than 64 bits at bit {self.pos}")

    def skip_vbrs(self, width: int, count: int) -> None:
        """Skip ``count`` VBR values without decoding them: the hot path of a module walk.

        A MODULE block holds one unabbreviated record per function and global (~20 VBR6 each).
        Instead of chunk-by-chunk reads, take a 64-byte window, mark the chunks whose
        continuation bit is clear (each ends one value) and find the ``count``-th by a binary
        search over popcounts: a few big-int operations per record instead of ~60.
        """
        if width < 2 or width > 32:
            raise ValueError(f"invalid VBR width {width}")
        buf, pos = self.buf, self.pos
        highs = _high_bits(width)
        while count:
            first = pos >> 3
            window = bytes(buf[first : first + _WINDOW])
            shift = pos & 7
            nchunks = (len(window) * 8 - shift) // width
            if nchunks == 0:
                raise Truncated(f"VBR at bit {pos} runs past the end of the stream")
            span = nchunks * width
            ends = ~(int.from_bytes(window, "little") >> shift) & highs & ((1 << span) - 1)
            found = ends.bit_count()
            if found < count:
                count -= found
                pos += span
                continue
            lo, hi = 0, span  # the shortest prefix holding ``count`` value ends
            while lo < hi:
                mid = (lo + hi) >> 1
                if (ends & ((1 << mid) - 1)).bit_count() >= count:
                    hi = mid
                else:
                    lo = mid + 1
            pos += lo
            count = 0
        if pos > self.end:
            raise Truncated(f"record operands run past bit {self.end}")
        self.pos = pos

    def align32(self) -> None:
        self.pos = (self.pos + 31) & ~31
        if self.pos > self.end:
            raise Truncated("bitstream alignment runs past the end")

    def take(self, nbytes: int) -> bytes:
        """Aligned bytes (blobs)."""
        if self.pos & 7 or nbytes < 0 or self.pos + nbytes * 8 > self.end:
            raise Truncated(f"blob of {nbytes} bytes at bit {self.pos} runs past the end")
        start = self.pos >> 3
        self.pos += nbytes * 8
        return bytes(self.buf[start : start + nbytes])


# An abbreviation operand: ("lit", value) | ("fixed", w) | ("vbr", w) | ("array",) | ("char6",)
# | ("blob",)
Op = tuple[str, int]
_ENCODINGS = {1: "fixed", 2: "vbr", 3: "array", 4: "char6", 5: "blob"}


def _define_abbrev(b: Bits) -> list[Op]:
    n = b.vbr(5)
    if n == 0 or n > b.left():
        raise ValueError(f"abbreviation with {n} operands")
    ops: list[Op] = []
    for _ in range(n):
        if b.read(1):
            ops.append(("lit", b.vbr(8)))
            continue
        enc = _ENCODINGS.get(b.read(3))
        if enc is None:
            raise ValueError(f"unknown abbreviation encoding at bit {b.pos}")
        width = b.vbr(5) if enc in ("fixed", "vbr") else 0
        if width > 64 or (enc == "vbr" and width < 2 and width != 0):
            raise ValueError(f"invalid {enc} width {width}")
        ops.append((enc, width))
    return ops


def _scalar(b: Bits, op: Op) -> int:
    kind, w = op
    if kind == "lit":
        return w
    if kind == "fixed":
        return b.read(w)
    if kind == "vbr":
        return b.vbr(w) if w else 0
    if kind == "char6":
        return ord(_CHAR6[b.read(6)])
    raise ValueError(f"{kind} cannot be an array element or a scalar here")


def _abbrev_record(b: Bits, ops: list[Op]) -> tuple[list[int], bytes | None]:
    """Values of one abbreviated record (the code first) and its blob, if any."""
    vals: list[int] = []
    blob: bytes | None = None
    i = 0
    while i < len(ops):
        kind = ops[i][0]
        if kind == "array":
            if i + 2 != len(ops):
                raise ValueError("an array must be the next-to-last abbreviation operand")
            n = b.vbr(6)
            elt = ops[i + 1]
            if elt[0] in ("array", "blob"):
                raise ValueError("invalid array element encoding")
            zero_width = elt[0] == "lit" or (elt[0] in ("fixed", "vbr") and elt[1] == 0)
            if zero_width:
                if n > 1 << 20:
                    raise ValueError(f"array of {n} zero-width elements")
                vals.extend(_scalar(b, elt) for _ in range(n))
            else:
                if n > b.left():
                    raise Truncated(f"array of {n} elements cannot fit the stream")
                vals.extend(_scalar(b, elt) for _ in range(n))
            return vals, blob
        if kind == "blob":
            n = b.vbr(6)
            b.align32()
            blob = b.take(n)
            b.align32()
        else:
            vals.append(_scalar(b, ops[i]))
        i += 1
    return vals, blob


@dataclass
class _Block:
    """What a walk of one block collected: records by code and sub-block ids, and the walks
    of the sub-blocks it was asked to enter (``None`` for one that could not be read)."""

    records: list[tuple[int, list[int], bytes | None]] = field(default_factory=list)
    subblocks: list[int] = field(default_factory=list)
    entered: list[tuple[int, _Block | None]] = field(default_factory=list)


def _walk_block(b: Bits, width: int, end: int, want_records: frozenset[int],
                enter: frozenset[int] = frozenset()) -> _Block:
    """Records (codes in ``want_records``) and sub-block ids of one block; sub-blocks are
    skipped by their length, except those in ``enter``, walked for the same records (one
    level deep: a sub-block that cannot be read is recorded as ``None``, not an error)."""
    out = _Block()
    abbrevs: list[list[Op]] = []
    while b.pos < end:
        aid = b.read(width)
        if aid == 0:  # END_BLOCK
            b.align32()
            return out
        if aid == 1:  # ENTER_SUBBLOCK: skip by its length
            bid = b.vbr(8)
            sub_width = b.vbr(4)
            b.align32()
            words = b.read(32)
            if b.pos + words * 32 > end:
                raise Truncated(f"block {bid} of {words} words runs past its parent")
            sub_end = b.pos + words * 32
            if bid in enter and 2 <= sub_width <= 32:
                try:
                    out.entered.append((bid, _walk_block(b, sub_width, sub_end, want_records)))
                except (Truncated, ValueError):
                    out.entered.append((bid, None))
            b.pos = sub_end
            out.subblocks.append(bid)
        elif aid == 2:
            abbrevs.append(_define_abbrev(b))
        elif aid == 3:  # UNABBREV_RECORD
            code = b.vbr(6)
            n = b.vbr(6)
            if n > b.left():
                raise Truncated(f"record of {n} operands cannot fit the stream")
            if code in want_records:
                out.records.append((code, [b.vbr(6) for _ in range(n)], None))
            else:
                b.skip_vbrs(6, n)
        else:
            if aid - 4 >= len(abbrevs):
                raise ValueError(f"record uses undefined abbreviation {aid} at bit {b.pos}")
            vals, blob = _abbrev_record(b, abbrevs[aid - 4])
            if not vals:
                raise ValueError(f"abbreviated record without a code at bit {b.pos}")
            if vals[0] in want_records:
                out.records.append((vals[0], vals[1:], blob))
    raise Truncated("block has no END_BLOCK before its declared end")


@dataclass
class Bitcode:
    """The facts a top-level walk yields."""

    top_blocks: list[int] = field(default_factory=list)
    module_subblocks: list[int] = field(default_factory=list)
    triple: str | None = None
    source_file: str | None = None
    identification: str | None = None  # the IDENTIFICATION block's string (the writer)
    symtab: bytes | None = None
    strtab: bytes | None = None
    # the string attributes of functions ("target-features" -> its values, one per group);
    # None when an attribute group block could not be read
    fn_attrs: dict[str, list[str]] | None = field(default_factory=dict)


def _text(vals: list[int]) -> str:
    return bytes(v & 0xFF for v in vals).decode("utf-8", "replace")


def _string_attrs(vals: list[int]) -> dict[str, str] | None:
    """The string attributes of one PARAMATTR_GRP_CODE_ENTRY (after grpid and paramidx):
    kind 0 enum (id), 1 int (id, value), 3 string key, 4 string key and value (NUL-ended),
    5 type attribute without a type (id), 6 with one (id, type). ``None`` on a kind this
    reader does not know (its length cannot be told)."""
    out: dict[str, str] = {}
    i, n = 0, len(vals)

    def cstr(at: int) -> tuple[str, int]:
        stop = at
        while stop < n and vals[stop] != 0:
            stop += 1
        if stop >= n:
            raise ValueError("attribute string without its NUL")
        return _text(vals[at:stop]), stop + 1

    try:
        while i < n:
            kind = vals[i]
            if kind in (0, 5):
                i += 2
            elif kind in (1, 6):
                i += 3
            elif kind == 3:
                key, i = cstr(i + 1)
                out[key] = ""
            elif kind == 4:
                key, i = cstr(i + 1)
                out[key], i = cstr(i)
            else:
                return None
    except ValueError:
        return None
    return out if i == n else None


def _fn_attrs(blk: _Block) -> dict[str, list[str]] | None:
    """Every function attribute group's string attributes, key -> values."""
    out: dict[str, list[str]] = {}
    for bid, sub in blk.entered:
        if bid != Block.PARAMATTR_GROUP:
            continue
        if sub is None:
            return None
        for code, vals, _ in sub.records:
            if code != PARAMATTR_GRP_CODE_ENTRY or len(vals) < 2:
                continue
            attrs = _string_attrs(vals[2:])
            if attrs is None:
                return None
            if vals[1] == FUNCTION_ATTRS:
                for k, v in attrs.items():
                    out.setdefault(k, []).append(v)
    return out


def walk(r: Reader, start: int, end: int) -> Bitcode:
    """Top-level blocks of one bitstream; MODULE's records, SYMTAB/STRTAB blobs."""
    if r.bytes(start, 4, "magic") != RAW_MAGIC:
        raise ValueError("bitcode stream does not start with BC C0 DE")
    b = Bits(r, start + 4, end)
    out = Bitcode()
    while b.left() >= 2 + 32:
        aid = b.read(2)
        if aid == 0:  # padding after the last block (the wrapper may round up)
            break
        if aid != 1:
            raise ValueError(f"top-level abbreviation id {aid} at bit {b.pos} (expected a block)")
        bid = b.vbr(8)
        width = b.vbr(4)
        b.align32()
        words = b.read(32)
        body_end = b.pos + words * 32
        if body_end > b.end:
            raise Truncated(f"block {bid} of {words} words runs past the end of the stream")
        out.top_blocks.append(bid)
        if bid == Block.MODULE and out.triple is None:
            blk = _walk_block(b, width, body_end,
                              frozenset({MODULE_CODE_TRIPLE, MODULE_CODE_SOURCE_FILENAME,
                                         PARAMATTR_GRP_CODE_ENTRY}),
                              enter=frozenset({Block.PARAMATTR_GROUP}))
            out.module_subblocks = blk.subblocks
            out.fn_attrs = _fn_attrs(blk)
            for code, vals, _ in blk.records:
                if code == MODULE_CODE_TRIPLE:
                    out.triple = _text(vals)
                elif code == MODULE_CODE_SOURCE_FILENAME:
                    out.source_file = _text(vals)
        elif bid == Block.IDENTIFICATION and out.identification is None:
            blk = _walk_block(b, width, body_end, frozenset({IDENTIFICATION_CODE_STRING}))
            text = next((_text(v) for c, v, _ in blk.records
                         if c == IDENTIFICATION_CODE_STRING), None)
            out.identification = text[: producer.MAX_TEXT] if text is not None else None
        elif bid in (Block.SYMTAB, Block.STRTAB):
            blk = _walk_block(b, width, body_end, frozenset({BLOB_RECORD}))
            blob = next((bl for _, _, bl in blk.records if bl is not None), None)
            if bid == Block.SYMTAB:
                out.symtab = blob
            else:
                out.strtab = blob
        b.pos = body_end
    if Block.MODULE not in out.top_blocks:
        raise Truncated("bitcode stream has no MODULE block")
    return out


# --- irsymtab ----------------------------------------------------------------------------------


@dataclass
class IrSymtab:
    """LLVM's irsymtab of a bitcode module: its producer and triple, and its symbols."""

    producer: str
    triple: str
    source_file: str
    symbols: list[tuple[str, int]]  # (name, flags)


def _str(strtab: bytes, symtab: bytes, off: int) -> str:
    s_off, s_size = struct.unpack_from("<II", symtab, off)
    if s_off + s_size > len(strtab):
        raise Truncated(f"irsymtab string ({s_off}, {s_size}) runs past the string table")
    return strtab[s_off : s_off + s_size].decode("utf-8", "replace")


def parse_irsymtab(symtab: bytes, strtab: bytes) -> IrSymtab | None:
    """The irsymtab header and symbols (§2.4); ``None`` for another table version."""
    if len(symtab) < 76:
        raise Truncated(f"irsymtab of {len(symtab)} bytes is shorter than its header")
    (version,) = struct.unpack_from("<I", symtab, 0)
    if version != IRSYMTAB_VERSION:
        return None
    sym_off, sym_count = struct.unpack_from("<II", symtab, 28)
    if sym_off + sym_count * 24 > len(symtab):
        raise Truncated(f"irsymtab lists {sym_count} symbols past its end")
    syms = []
    for i in range(sym_count):
        at = sym_off + 24 * i
        (flags,) = struct.unpack_from("<I", symtab, at + 20)
        syms.append((_str(strtab, symtab, at), flags))
    return IrSymtab(
        producer=_str(strtab, symtab, 4),
        triple=_str(strtab, symtab, 44),
        source_file=_str(strtab, symtab, 52),
        symbols=syms,
    )


# --- triples -----------------------------------------------------------------------------------


def triple_os_arch(triple: str) -> tuple[str | None, str | None]:
    """``x86_64-apple-macosx11.0.0`` → ("macos", "x86_64"); unknown parts stay ``None``."""
    parts = triple.split("-")
    a = parts[0]
    arch: str | None
    if a in ("x86_64", "amd64"):
        arch = "x86_64"
    elif a in ("aarch64", "arm64", "arm64e", "aarch64_be"):
        arch = "aarch64"
    elif a in ("i386", "i486", "i586", "i686"):
        arch = "i686"
    elif a.startswith(("arm", "thumb")):
        arch = "arm"
    elif a in ("wasm32", "wasm64"):
        arch = a
    else:
        arch = None
    rest = "-".join(parts[1:])
    os: str | None = None
    if "emscripten" in rest:
        os = "emscripten"
    elif "wasi" in rest:
        os = "wasi"
    elif "linux" in rest:
        os = "linux"
    elif "macos" in rest or "darwin" in rest:
        os = "macos"
    elif "windows" in rest or "win32" in rest or "mingw" in rest:
        os = "windows"
    elif arch in ("wasm32", "wasm64") and rest in ("unknown-unknown", "unknown", "none", ""):
        os = "none"
    return os, arch


# --- the reader --------------------------------------------------------------------------------


def _stream_bounds(r: Reader, f: Facts) -> tuple[int, int]:
    if r.bytes(0, 4, "magic") == WRAPPER_MAGIC:
        version, offset, size, cputype = (r.u32(4), r.u32(8), r.u32(12), r.u32(16))
        r.check(offset, size, "wrapped bitcode")
        f.details["wrapper"] = {"version": version, "offset": offset, "size": size,
                                "cputype": f"0x{cputype:08x}"}
        return offset, offset + size
    return 0, r.size


def _lto_kind(bc: Bitcode, f: Facts) -> None:
    subs = set(bc.module_subblocks)
    if Block.GLOBALVAL_SUMMARY in subs:
        f.details["lto_kind"] = "thin"
        f.note("lto", "ThinLTO summary block (20) in the module")
    elif Block.FULL_LTO_GLOBALVAL_SUMMARY in subs:
        f.details["lto_kind"] = "full"
        f.note("lto", "full-LTO summary block (24) in the module")
    else:
        f.details["lto_kind"] = None  # Apple -flto and plain -emit-llvm both have no summary
        f.note("lto", "no summary block: full LTO for an Apple target, or non-LTO bitcode")


def _symbols(tab: IrSymtab) -> Symbols:
    out = Symbols()
    for name, flags in tab.symbols:
        if flags & (1 << SymFlag.UNDEFINED):
            out.undefined.append(name)
            continue
        if not flags & ((1 << SymFlag.GLOBAL) | (1 << SymFlag.WEAK)):
            continue  # internal linkage: not visible to a linker
        out.defined.append(name)
        if flags & (1 << SymFlag.WEAK):
            out.weak.add(name)
        if flags & 0x3 != 1:  # visibility bits: 1 = hidden
            out.exports.append(name)
    return out


class BitcodeReader:
    """``FormatReader`` for LLVM bitcode (raw and wrapped)."""

    name = "llvm-bitcode"

    def sniff(self, head: bytes) -> bool:
        return head[:4] in (RAW_MAGIC, WRAPPER_MAGIC)

    def parse(self, data: Buffer, path: str, opts: ParseOptions) -> Facts:
        r = Reader(data)
        f = Facts(path=path, format="llvm-bitcode", kind="object")
        f.abi.lto = "llvm-bitcode"
        start, end = _stream_bounds(r, f)
        bc = walk(r, start, end)
        f.note("lto", "LLVM bitcode" + (" (Darwin wrapper)" if "wrapper" in f.details else ""))
        _lto_kind(bc, f)
        tab = None
        if bc.symtab is not None and bc.strtab is not None:
            tab = parse_irsymtab(bc.symtab, bc.strtab)
        triple = bc.triple or (tab.triple if tab else None)
        details: dict[str, Any] = {
            "triple": triple,
            "top_blocks": bc.top_blocks,
            "module_subblocks": sorted(set(bc.module_subblocks)),
            "producer": tab.producer if tab else None,
            "source_file": bc.source_file or (tab.source_file if tab else None),
            "irsymtab": tab is not None,
        }
        f.details.update(details)
        if triple:
            f.os, f.arch = triple_os_arch(triple)
            if f.os:
                f.note("os", f"target triple {triple}")
            if f.arch:
                f.note("arch", f"target triple {triple}")
        if tab is not None:
            f.symbols = _symbols(tab)
        _features(f, bc, f.arch in ("wasm32", "wasm64"))
        _eh(f, tab, f.arch in ("wasm32", "wasm64"))
        text = bc.identification
        producer.record(f, [] if text is None else [
            ("IDENTIFICATION", text, producer.parse(text))],
            absent="no IDENTIFICATION block (written by every LLVM since 3.8)")
        return f


WASM_PERSONALITY = "__gxx_wasm_personality_v0"  # clang -fwasm-exceptions: funclet EH
LANDING_PAD_PERSONALITIES = ("__gxx_personality_v0", "__gxx_personality_sj0",
                             "__gxx_personality_seh0")


def _features(f: Facts, bc: Bitcode, wasm: bool) -> None:
    """The target features the module's functions record (their ``target-features``
    attribute, which clang fills with the CPU's features and every ``-m`` flag): for a wasm
    triple, the list the compiled object's ``target_features`` section would carry."""
    if bc.fn_attrs is None:
        f.note("wasm_features" if wasm else "target_features",
               "an attribute group block could not be read: features unknown")
        return
    values = bc.fn_attrs.get("target-features", [])
    enabled: set[str] = set()
    for v in values:
        enabled.update(x[1:] for x in v.split(",") if x.startswith("+"))
    cpus = sorted(set(bc.fn_attrs.get("target-cpu", [])))
    f.details["target_features"] = sorted(enabled)
    if cpus:
        f.details["target_cpu"] = cpus
    if not wasm:
        return
    f.abi.wasm_features = sorted(enabled)
    f.abi.wasm_features_complete = True  # what the compiler enabled: a superset of the use
    f.abi.simd128 = "simd128" in enabled
    f.abi.relaxed_simd = "relaxed-simd" in enabled
    # as for a wasm object: shared memory needs both (wasm-ld refuses the link otherwise)
    f.abi.threads = {"atomics", "bulk-memory"} <= enabled
    why = (f"function attributes target-features: {', '.join(sorted(enabled))}" if values
           else "no function records target-features (no feature enabled)")
    if cpus:
        why += f"; target-cpu {', '.join(cpus)}"
    for fact in ("wasm_features", "simd128", "relaxed_simd", "threads"):
        f.note(fact, why)


def _eh(f: Facts, tab: IrSymtab | None, wasm: bool) -> None:
    """The EH model from the personality function the module's functions name (the irsymtab
    lists it as undefined): ``__gxx_wasm_personality_v0`` is native wasm EH; a landing-pad
    personality (``__gxx_personality_v0``) is Emscripten's JS EH on a wasm triple (the wasm
    backend lowers landing pads only that way) and native EH elsewhere."""
    if tab is None:
        f.note("eh", "no irsymtab: the personality cannot be read without decoding functions")
        return
    names = {n for n, _ in tab.symbols}
    throws = sorted(n for n in ("__cxa_throw", "__cxa_rethrow") if n in names)
    pads = sorted(n for n in LANDING_PAD_PERSONALITIES if n in names)
    if WASM_PERSONALITY in names and pads:
        f.abi.eh = "mixed"
        f.note("eh", f"personalities {WASM_PERSONALITY} and {', '.join(pads)}")
    elif WASM_PERSONALITY in names:
        f.abi.eh = "wasm" if wasm else "native"
        f.note("eh", f"personality {WASM_PERSONALITY} (wasm exception handling)")
    elif pads:
        f.abi.eh = "emscripten-legacy" if wasm else "native"
        f.note("eh", f"personality {', '.join(pads)} (landing pads"
               + (", lowered to Emscripten's JS exception handling)" if wasm else ")"))
    elif throws and not wasm:
        f.abi.eh = "native"
        f.note("eh", "references " + ", ".join(throws))
    else:
        f.abi.eh = "none"
        f.note("eh", "no personality function (no landing pads)"
               + (f"; references {', '.join(throws)} (throws only, like emcc's default)"
                  if throws else ""))


READER = BitcodeReader()
