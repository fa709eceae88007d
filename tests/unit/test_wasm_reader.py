"""The wasm and bitcode readers on small hand-assembled inputs, and on hostile mutations of them.

Hand assembly lets each rule be pinned to the exact bytes the specs define (docs/binary-formats.md
§2, §3): the import-name rule of undefined symbols, every opcode family of the deep decode (exnref
``try_table``, pre-standard and final relaxed SIMD, multi-memory memargs), the Asyncify bodies,
and the bitstream's abbreviations and blobs. The property tests then feed truncated and
mutated copies to the readers: only ``FormatError`` may come out, quickly.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prebake.errors import FormatError
from prebake.inspect import ParseOptions, hotloops, inspect_bytes, wasm_code
from prebake.inspect import bitcode as bc
from prebake.inspect.binreader import Reader, Truncated
from prebake.inspect.facts import Facts

# --- a tiny wasm assembler ---------------------------------------------------------------------


def leb(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def name(s: str) -> bytes:
    return leb(len(s)) + s.encode()


def vec(items: list[bytes]) -> bytes:
    return leb(len(items)) + b"".join(items)


def section(sid: int, payload: bytes) -> bytes:
    return bytes([sid]) + leb(len(payload)) + payload


def custom(nm: str, payload: bytes) -> bytes:
    return section(0, name(nm) + payload)


def body(code: bytes, locals_: bytes = b"\x00") -> bytes:
    b = locals_ + code
    return leb(len(b)) + b


HEADER = b"\x00asm\x01\x00\x00\x00"
FUNC_I32_TO_VOID = b"\x60\x01\x7f\x00"
FUNC_VOID = b"\x60\x00\x00"


def module(*sections: bytes) -> bytes:
    return HEADER + b"".join(sections)


def parse(data: bytes, **kw: bool) -> Facts:
    return inspect_bytes(data, "t.wasm", ParseOptions(symbols=True, **kw))


# --- relocatable objects ---------------------------------------------------------------------


def _object(features: list[str], linking_version: int = 2) -> bytes:
    imports = vec([
        name("env") + name("__linear_memory") + b"\x02\x00\x01",
        name("env") + name("__cxa_throw") + b"\x00\x00",
        name("env") + name("invoke_vi") + b"\x00\x00",
        name("env") + name("__resumeException") + b"\x00\x00",
    ])
    syms = [
        b"\x00" + leb(0x10) + leb(0),  # undefined func 0: name from the import (__cxa_throw)
        b"\x00" + leb(0x10 | 0x40) + leb(1) + name("invoke_vi"),  # explicit name
        b"\x00" + leb(0x10) + leb(2),  # __resumeException
        b"\x00" + leb(0x00) + leb(3) + name("defined_fn"),
        b"\x00" + leb(0x01 | 0x04) + leb(3) + name("weak_hidden"),
        b"\x00" + leb(0x02) + leb(3) + name("local_fn"),
        b"\x01" + leb(0x10) + name("__THREW__"),  # undefined data: no segment info
        b"\x01" + leb(0x00) + name("a_global") + leb(0) + leb(0) + leb(4),
        b"\x03" + leb(0x02) + leb(1),  # section symbol: skipped
    ]
    linking = leb(linking_version) + b"\x08" + leb(len(vec(syms))) + vec(syms)
    feats = vec([b"+" + name(f[1:]) if f[0] == "+" else b"-" + name(f[1:]) for f in features])
    return module(
        section(1, vec([FUNC_I32_TO_VOID])),
        section(2, imports),
        section(3, vec([b"\x00"])),
        section(10, vec([body(b"\x0b")])),
        custom("linking", linking),
        *([custom("target_features", feats)] if features else []),
    )


def test_object_symbols_follow_the_import_name_rule() -> None:
    f = parse(_object([]))
    assert f.kind == "object"
    sy = f.symbols
    assert sy is not None
    assert sy.undefined == ["__cxa_throw", "invoke_vi", "__resumeException", "__THREW__"]
    assert sy.defined == ["defined_fn", "weak_hidden", "a_global"]
    assert sy.weak == {"weak_hidden"}
    assert sy.exports == ["defined_fn", "a_global"]
    assert f.abi.eh == "emscripten-legacy"
    assert f.os == "emscripten"


@pytest.mark.parametrize(
    ("features", "threads", "simd", "relaxed"),
    [
        ([], False, False, False),
        (["+atomics", "+bulk-memory"], True, False, False),
        (["+atomics"], False, False, False),
        (["-shared-mem"], False, False, False),
        (["+simd128", "+relaxed-simd"], False, True, True),
    ],
)
def test_object_features(features: list[str], threads: bool, simd: bool, relaxed: bool) -> None:
    f = parse(_object(features))
    abi = f.abi
    assert (abi.threads, abi.simd128, abi.relaxed_simd) == (threads, simd, relaxed)
    assert abi.wasm_features == sorted(x[1:] for x in features if x[0] == "+")
    if "-shared-mem" in features:
        assert "disallowed" in f.details["threads_reason"]


def test_unknown_linking_version_leaves_eh_unknown() -> None:
    f = parse(_object([], linking_version=1))
    assert f.symbols is None and f.abi.eh is None
    assert f.details["linking_version"] == "unsupported"


def test_object_with_both_eh_kinds_is_mixed() -> None:
    f = parse(_object(["+exception-handling"]))
    assert f.abi.eh == "mixed"


# --- the deep decoder ------------------------------------------------------------------------

EVERY_FAMILY = b"".join([
    b"\x02\x40",  # block
    b"\x1f\x40" + vec([b"\x00\x00\x00", b"\x01\x00\x00", b"\x02\x00", b"\x03\x01"]),  # try_table
    b"\x0a",  # throw_ref
    b"\x0b",
    b"\x06\x40\x41\x00\x08\x00\x07\x00\x19\x09\x00\x0b",  # try throw catch catch_all rethrow
    b"\x06\x7f\x41\x01\x18\x00",  # try … delegate (delegate closes the try)
    b"\x0b",  # end block
    b"\x41\x00\x0e" + vec([b"\x00", b"\x01"]) + b"\x00",  # br_table (unreachable after)
    b"\x41\x00\x41\x01\x41\x00\x1c" + vec([b"\x7f"]) + b"\x1a",  # select t
    b"\xfd\x0c" + bytes(16) + b"\x1a",  # v128.const
    b"\xfd\x0c" + bytes(16) + b"\xfd\x0c" + bytes(16) + b"\xfd\x0d" + bytes(16) + b"\x1a",
    b"\xfd\x0c" + bytes(16) + b"\xfd\x15\x03\x1a",  # extract_lane
    b"\x41\x00\xfd\x00\x44\x00\x00\x1a",  # v128.load, align with bit 6: memory index follows
    b"\xfd\x0c" + bytes(16) + b"\xfd\x0c" + bytes(16) + b"\xfd\xa2\x01\x1a",  # LLVM 14 relaxed
    b"\xfd\x0c" + bytes(16) + b"\xfd\x0c" + bytes(16) + b"\xfd\x80\x02\x1a",  # final relaxed
    b"\xfe\x03\x00",  # atomic.fence
    b"\x41\x00\x41\x00\xfe\x1e\x02\x00\x1a",  # i32.atomic.rmw.add
    b"\x41\x00\x41\x00\x41\x00\xfc\x0b\x00",  # memory.fill
    b"\x43\x00\x00\x00\x00\xfc\x00\x1a",  # i32.trunc_sat_f32_s
    b"\x41\x00\xc0\x1a",  # i32.extend8_s
    b"\xd0\x70\xd1\x1a",  # ref.null func; ref.is_null
    b"\x42\x80\x80\x80\x80\x80\x80\x80\x80\x01\x1a",  # a 10-byte i64.const
    b"\x44" + bytes(8) + b"\x1a",
    b"\x12\x00",  # return_call
    b"\x0b",
])


def test_decoder_knows_every_family() -> None:
    counts: Counter[str] = Counter()
    bodies = body(EVERY_FAMILY, vec([b"\x01\x7b", b"\x02\x69"]))
    buf = vec([bodies])
    scan = wasm_code.scan_locals(buf, 0, len(buf), keep_bodies=True)
    assert (scan.v128_locals, scan.exnref_locals) == (1, 1)
    start, end = scan.bodies[0]
    wasm_code.decode_body(buf, start, end, counts)
    assert counts["eh_exnref"] == 2  # try_table + throw_ref
    assert counts["eh_legacy"] == 6  # try, catch, catch_all, rethrow, try, delegate
    assert counts["eh_throw"] == 1
    assert counts["relaxed_simd"] == 2
    assert counts["simd"] == 11  # v128.const ×8, shuffle, extract_lane, v128.load
    assert counts["atomics"] == 2
    assert counts["bulk_memory"] == 1 and counts["sat_trunc"] == 1 and counts["sign_ext"] == 1
    assert counts["tail_call"] == 1
    assert counts["reference_types"] >= 3


@pytest.mark.parametrize("code", [
    b"\x41\x00",  # no final end
    b"\x0b\x01",  # a byte after the final end
    b"\x02\x40\x0b",  # block without its own end... then missing the function's end
    b"\xfd\xff\x0f\x0b",  # SIMD sub-opcode out of range
    b"\xff\x0b",  # unknown opcode
    b"\x44\x00\x0b",  # f64.const runs past the body
])
def test_decoder_refuses_inexact_bodies(code: bytes) -> None:
    buf = vec([body(code)])
    scan = wasm_code.scan_locals(buf, 0, len(buf), keep_bodies=True)
    with pytest.raises(Truncated):
        wasm_code.decode_bodies(buf, scan.bodies)


# Single instructions (each balanced, so any sequence of them is a body), for the property below:
# every shape the expressions spell and some they leave to the Python step (4 catches, a
# non-minimal LEB, exnref block types, a typed select of exnref).
PIECES = [
    b"\x41\x05\x1a", b"\x41\x80\x01\x1a", b"\x42\x80\x80\x80\x80\x80\x80\x80\x80\x01\x1a",
    b"\x20\x00\x1a", b"\x41\x00\x28\x02\x08\x1a", b"\x41\x00\x28\x42\x00\x08\x1a",
    b"\x02\x40\x0b", b"\x03\x40\x0b", b"\x02\x7f\x41\x00\x0b\x1a", b"\x02\x69\x00\x0b\x1a",
    b"\x02\x63\x69\x00\x0b\x1a", b"\x02\x63\x70\x00\x0b\x1a", b"\x02\x80\x00\x0b",
    b"\x06\x40\x08\x00\x07\x00\x19\x09\x00\x0b", b"\x06\x40\x18\x00",
    b"\x1f\x40\x00\x0b", b"\x1f\x40\x01\x02\x00\x0b",
    b"\x1f\x40\x04\x00\x00\x00\x01\x00\x00\x02\x00\x03\x00\x0b",  # 4 catches
    b"\x1f\x69\x00\x00\x0b\x1a", b"\xd0\x69\x1a", b"\x0a",
    b"\x41\x00\x41\x00\x41\x00\x1c\x01\x69\x1a", b"\x41\x00\x0e\x01\x00\x00\x00",
    b"\xfd\x0c" + bytes(16) + b"\x1a", b"\xfd\x0c" + bytes(16) + b"\xfd\x80\x02\x1a",
    b"\xfe\x03\x00", b"\x41\x00\x41\x00\x41\x00\xfc\x0b\x00", b"\x44" + bytes(8) + b"\x1a",
    b"\x08\x00", b"\x10\x80\x00",  # throw; call with a 2-byte index
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(PIECES), max_size=12))
def test_the_decode_counts_every_exnref_type_of_any_sequence(pieces: list[bytes]) -> None:
    """exnref named by a block type (short and ``63 69``), try_table's block type, ``ref.null
    exn`` and a typed select, beside a local: each counted once, whatever surrounds it."""
    buf = vec([body(b"".join(pieces) + b"\x0b", vec([b"\x01\x69"]))])
    scan = wasm_code.scan_locals(buf, 0, len(buf), keep_bodies=True)
    deep = wasm_code.decode_bodies(buf, scan.bodies)
    types = sum(p.count(t) for p in pieces for t in (
        b"\x02\x69", b"\x02\x63\x69", b"\x1f\x69", b"\xd0\x69", b"\x1c\x01\x69"))
    assert deep.counts["exnref_type"] == types + 1  # the local
    assert deep.counts["eh_legacy"] == sum(p.count(b"\x06\x40") for p in pieces) * 4 - sum(
        p == b"\x06\x40\x18\x00" for p in pieces) * 2


def _both_decodes(buf: bytes, bodies: list[tuple[int, int]]) -> tuple[object, object]:
    """(C, Python) deep decodes of ``bodies``: each a ``DeepScan``, or the error's type."""
    out: list[object] = []
    for decode in (wasm_code.decode_bodies, wasm_code.decode_bodies_py):
        try:
            out.append(decode(buf, bodies))
        except Truncated as exc:
            out.append(type(exc))
    return out[0], out[1]


# What EVERY_FAMILY lacks: call_ref (typed function references), ref.null any and ref.i31
# (GC), a block of a type index (multi-value), call_indirect's table as a 2-byte LEB,
# i64.add128 (wide arithmetic), in a body with a local of (ref 0)
MORE_FAMILIES = (b"\x14\x00\xd0\x6e\x1a\x41\x00\xfb\x1c\x1a\x02\x00\x0b"
                 b"\x41\x00\x11\x00\x80\x00\xfc\x13\x0b")


def test_the_c_deep_decode_counts_every_family_as_the_python_does() -> None:
    assert hotloops.BUILT, "the C extension is not built (scripts/bootstrap)"
    more = body(MORE_FAMILIES, vec([b"\x01\x64\x00"]))
    buf = vec([body(EVERY_FAMILY, vec([b"\x01\x7b", b"\x02\x69"])), more])
    scan = wasm_code.scan_locals(buf, 0, len(buf), keep_bodies=True)
    fast = hotloops.scan.wasm_deep_scan(buf, scan.bodies, *wasm_code.deep_tables())
    assert isinstance(fast, tuple)
    c, py = _both_decodes(buf, scan.bodies)
    assert c == py
    assert isinstance(c, wasm_code.DeepScan)
    assert set(c.counts) == set(wasm_code.FAMILIES)  # every family, each counted at least once


# Instructions that open or close blocks on their own (a body of them may be unbalanced: an
# `end` before the last byte, a `delegate` below depth 0), beside the balanced PIECES
UNBALANCED = [b"\x0b", b"\x02\x40", b"\x06\x40", b"\x18\x00", b"\x1f\x40\x00", b"\x07\x00"]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(PIECES + UNBALANCED), max_size=12))
def test_the_c_deep_decode_agrees_with_the_python_on_any_sequence(pieces: list[bytes]) -> None:
    """Counts where both decode; the same refusal (the C gives up, the Python raises) where a
    body's blocks do not close exactly at its last byte."""
    buf = vec([body(b"".join(pieces) + b"\x0b", vec([b"\x01\x69"]))])
    scan = wasm_code.scan_locals(buf, 0, len(buf), keep_bodies=True)
    c, py = _both_decodes(buf, scan.bodies)
    assert c == py


LEGACY_BODY = b"\x06\x40\x10\x00\x19\x0b\x0b"  # try; call 0; catch_all; end; end
EXNREF_BODY = b"\x02\x69\x1f\x40\x01\x03\x00\x10\x00\x0b\x0f\x0b\x0a\x0b"  # block(exnref)
# try_table (catch_all_ref 0) call 0 end return end throw_ref end


@pytest.mark.parametrize(("bodies", "encoding"), [
    ([LEGACY_BODY], "legacy"), ([EXNREF_BODY], "exnref"), ([LEGACY_BODY, EXNREF_BODY], "both"),
    ([b"\x10\x00\x0b"], "none"),
])
def test_module_encoding_from_its_code(bodies: list[bytes], encoding: str) -> None:
    data = module(section(1, vec([FUNC_VOID])), section(3, vec([b"\x00"] * len(bodies))),
                  section(10, vec([body(b) for b in bodies])))
    f = parse(data)
    assert f.abi.wasm_eh_encoding == encoding, f.evidence
    assert parse(data, deep=True).abi.wasm_eh_encoding == encoding


def test_a_body_that_does_not_decode_leaves_the_encoding_unknown_with_the_reason() -> None:
    data = module(section(1, vec([FUNC_VOID])), section(3, vec([b"\x00"])),
                  section(10, vec([body(b"\x06\x40\xff\x0b\x0b")])))
    f = parse(data)
    assert f.error is None and f.abi.wasm_eh_encoding is None
    assert "could not be decoded" in " ".join(f.evidence["wasm_eh_encoding"])
    assert "unknown opcode 0xff" in " ".join(f.evidence["wasm_eh_encoding"])


def test_only_the_body_the_c_cannot_read_is_decoded_again_in_python(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """One corrupt byte in the last of 20 000 bodies: the C decode names that body, and the
    Python decodes it alone to say where (it used to decode every body: 20 s on 40 MB)."""
    assert hotloops.BUILT, "the C extension is not built (scripts/bootstrap)"
    good = body(b"\x41\x01\x41\x02\x6a\x1a" * 8 + b"\x0b")
    bad = body(b"\x41\x01\xff\x0b")
    n = 20_000
    data = module(section(1, vec([FUNC_VOID])), section(3, vec([b"\x00"] * n)),
                  section(10, vec([good] * (n - 1) + [bad])))
    seen: list[int] = []
    real = wasm_code.decode_body

    def spy(buf: bytes, pos: int, end: int, counts: Counter[str]) -> None:
        seen.append(pos)
        real(buf, pos, end, counts)

    monkeypatch.setattr(wasm_code, "decode_body", spy)
    f = parse(data)
    assert len(seen) == 1, f"the Python decoded {len(seen)} bodies"
    said = " ".join(f.evidence["wasm_eh_encoding"])
    assert "unknown opcode 0xff at offset" in said
    at = int(said.split("unknown opcode 0xff at offset ")[1].split()[0])
    assert data[at] == 0xFF and at > len(data) - 8  # the last body's byte, found by offset
    assert f.abi.wasm_eh_encoding is None and f.abi.wasm_features_complete is False


# --- linked modules ----------------------------------------------------------------------------

STOP = b"\x41\x00\x24\x00\x23\x01\x28\x02\x00\x23\x01\x28\x02\x04\x4b\x04\x40\x00\x0b\x0b"


def _asyncify_module(shift: bool = False) -> bytes:
    start = b"\x41\x01\x24\x00\x20\x00\x24\x01\x23\x01\x28\x02\x00\x23\x01\x28\x02\x04\x4b\x04" \
            b"\x40\x00\x0b\x0b"
    rewind = start.replace(b"\x41\x01\x24", b"\x41\x02\x24", 1)
    prefix = b"\x01\x0b" if shift else b""  # a nop before: no longer the body's start
    bodies = [body(prefix + start), body(STOP), body(rewind), body(STOP),
              body(b"\x23\x00\x41\x02\x46\x1a\x0b")]
    glob = b"\x7f\x01\x41\x00\x0b"
    return module(
        section(1, vec([FUNC_I32_TO_VOID, FUNC_VOID])),
        section(2, vec([name("env") + name("memory") + b"\x02\x03" + leb(1) + leb(2)])),
        section(3, vec([b"\x00", b"\x01", b"\x00", b"\x01", b"\x01"])),
        section(6, vec([glob, glob])),
        section(7, vec([name("su") + b"\x00\x00", name("sr") + b"\x00\x02"])),
        section(10, vec(bodies)),
    )


def test_asyncify_bodies_at_function_starts() -> None:
    f = parse(_asyncify_module())
    assert f.abi.async_ == "asyncify"
    assert f.details["asyncify"]["functions"] == ["su", "sr"]
    assert f.abi.threads is True
    g = parse(_asyncify_module(shift=True))
    assert g.abi.async_ is None


def test_module_with_tag_import_is_native_eh() -> None:
    data = module(
        section(1, vec([FUNC_I32_TO_VOID])),
        section(2, vec([name("env") + name("__cpp_exception") + b"\x04\x00\x00",
                        name("env") + name("memory") + b"\x02\x00\x01"])),
    )
    f = parse(data)
    assert f.abi.eh == "wasm" and f.abi.threads is False
    assert f.os is None


def test_wasm64_memory() -> None:
    data = module(section(5, vec([b"\x04\x01"])))
    assert parse(data).arch == "wasm64"


@pytest.mark.parametrize("data", [
    HEADER + b"\x0e\x00",  # unknown section id
    HEADER + b"\x01\x05\x01",  # section longer than the file
    HEADER + section(1, b"\xff\xff\xff\xff\x0f"),  # 4 billion types in a 5-byte section
    HEADER + section(1, b"\x81\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01"),  # an 11-byte LEB
    b"\x00asm\x0d\x00\x01\x00",  # a component, not a core module
])
def test_hostile_headers(data: bytes) -> None:
    with pytest.raises(FormatError, match=r"t\.wasm"):
        parse(data)


# --- bitcode: a tiny bitstream writer ----------------------------------------------------------


class BitWriter:
    def __init__(self) -> None:
        self.bits: list[int] = []
        self.depth = 0  # 0: top level (abbreviation width 2), else inside a block (width 4)

    def emit(self, value: int, width: int) -> None:
        self.bits += [(value >> i) & 1 for i in range(width)]

    def vbr(self, value: int, width: int) -> None:
        hi = 1 << (width - 1)
        while True:
            chunk = value & (hi - 1)
            value >>= width - 1
            self.emit(chunk | (hi if value else 0), width)
            if not value:
                return

    def align32(self) -> None:
        while len(self.bits) % 32:
            self.bits.append(0)

    def data(self) -> bytes:
        self.align32()
        out = bytearray()
        for i in range(0, len(self.bits), 8):
            out.append(sum(b << j for j, b in enumerate(self.bits[i : i + 8])))
        return bytes(out)


def _block(w: BitWriter, bid: int, fill: Callable[[BitWriter], None]) -> None:
    """ENTER_SUBBLOCK (abbrev width 4), the body, END_BLOCK; the length patched afterwards."""
    w.emit(1, 4 if w.depth else 2)
    w.vbr(bid, 8)
    w.vbr(4, 4)
    w.align32()
    at = len(w.bits)
    w.emit(0, 32)
    w.depth += 1
    fill(w)
    w.emit(0, 4)
    w.align32()
    w.depth -= 1
    words = (len(w.bits) - at - 32) // 32
    w.bits[at : at + 32] = [(words >> i) & 1 for i in range(32)]


def _blob_block(blob: bytes) -> Callable[[BitWriter], None]:
    def fill(w: BitWriter) -> None:
        w.emit(2, 4)  # DEFINE_ABBREV [literal 1, blob]
        w.vbr(2, 5)
        w.emit(1, 1)
        w.vbr(1, 8)
        w.emit(0, 1)
        w.emit(5, 3)
        w.emit(4, 4)  # the record, via abbreviation 4
        w.vbr(len(blob), 6)
        w.align32()
        for byte in blob:
            w.emit(byte, 8)
        w.align32()
    return fill


def _bitcode(triple: str, summary_block: int | None, syms: list[tuple[str, int]]) -> bytes:
    strtab = bytearray()
    symtab = bytearray(76)

    def add_str(s: str, at: int) -> None:
        off = len(strtab)
        strtab.extend(s.encode())
        symtab[at : at + 8] = off.to_bytes(4, "little") + len(s).to_bytes(4, "little")

    symtab[0:4] = (3).to_bytes(4, "little")
    add_str("14.0.6", 4)
    symtab[28:36] = (76).to_bytes(4, "little") + len(syms).to_bytes(4, "little")
    add_str(triple, 44)
    add_str("t.c", 52)
    for nm, flags in syms:
        at = len(symtab)
        symtab.extend(bytes(24))
        add_str(nm, at)
        symtab[at + 20 : at + 24] = flags.to_bytes(4, "little")

    def module_body(w: BitWriter) -> None:
        w.emit(3, 4)  # UNABBREV_RECORD: TRIPLE
        w.vbr(2, 6)
        w.vbr(len(triple), 6)
        for ch in triple.encode():
            w.vbr(ch, 6)
        if summary_block is not None:
            _block(w, summary_block, lambda w: None)

    w = BitWriter()
    _block(w, 8, module_body)
    _block(w, 25, _blob_block(bytes(symtab)))
    _block(w, 23, _blob_block(bytes(strtab)))
    return bc.RAW_MAGIC + w.data()


UNDEF, WEAK, GLOBAL = 1 << 3, 1 << 4, 1 << 10


@pytest.mark.parametrize(("summary", "kind"), [(20, "thin"), (24, "full"), (None, None)])
def test_bitcode_round_trip(summary: int | None, kind: str | None) -> None:
    data = _bitcode("aarch64-unknown-linux-gnu", summary,
                    [("f", GLOBAL), ("u", UNDEF), ("w", GLOBAL | WEAK), ("local", 0)])
    f = inspect_bytes(data, "t.bc", ParseOptions())
    assert (f.format, f.os, f.arch, f.abi.lto) == ("llvm-bitcode", "linux", "aarch64",
                                                   "llvm-bitcode")
    assert f.details["lto_kind"] == kind
    assert f.symbols is not None
    assert (f.symbols.defined, f.symbols.undefined, f.symbols.weak) == (["f", "w"], ["u"], {"w"})


def test_bitcode_wrapper() -> None:
    raw = _bitcode("x86_64-apple-macosx11.0.0", None, [("_f", GLOBAL)])
    wrapped = (bc.WRAPPER_MAGIC + (0).to_bytes(4, "little") + (20).to_bytes(4, "little")
               + len(raw).to_bytes(4, "little") + (0x01000007).to_bytes(4, "little") + raw)
    f = inspect_bytes(wrapped, "t.o", ParseOptions())
    assert (f.os, f.arch) == ("macos", "x86_64") and f.details["wrapper"]["offset"] == 20


@pytest.mark.parametrize(("triple", "os", "arch"), [
    ("wasm32-unknown-emscripten", "emscripten", "wasm32"),
    ("wasm32-wasi", "wasi", "wasm32"),
    ("wasm32-unknown-unknown", "none", "wasm32"),
    ("x86_64-pc-windows-msvc", "windows", "x86_64"),
    ("i686-w64-mingw32", "windows", "i686"),
    ("armv7-unknown-linux-gnueabihf", "linux", "arm"),
    ("riscv64-unknown-linux-gnu", "linux", None),
    ("x86_64-unknown-freebsd", None, "x86_64"),
])
def test_triples(triple: str, os: str | None, arch: str | None) -> None:
    assert bc.triple_os_arch(triple) == (os, arch)


# --- property tests: hostile inputs only ever give FormatError ----------------------------------

SEEDS = [
    _object(["+atomics", "+bulk-memory", "-shared-mem"]),
    _asyncify_module(),
    module(section(1, vec([FUNC_VOID])), section(3, vec([b"\x00"])),
           section(10, vec([body(EVERY_FAMILY, vec([b"\x01\x7b"]))]))),
    _bitcode("wasm32-unknown-emscripten", 24, [("f", GLOBAL), ("u", UNDEF)]),
]


def _check(data: bytes) -> None:
    for deep in (False, True):
        try:
            inspect_bytes(data, "fuzz.bin", ParseOptions(symbols=True, deep=deep))
        except FormatError as exc:
            assert "fuzz.bin" in str(exc)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.sampled_from(SEEDS), cut=st.integers(min_value=0, max_value=400))
def test_truncations(seed: bytes, cut: int) -> None:
    _check(seed[: min(cut, len(seed))] or seed[:1])


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.sampled_from(SEEDS), data=st.data())
def test_mutations(seed: bytes, data: st.DataObject) -> None:
    buf = bytearray(seed)
    for _ in range(data.draw(st.integers(1, 6))):
        at = data.draw(st.integers(4, len(buf) - 1))
        buf[at] = data.draw(st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0xFF, buf[at] ^ 0x40]))
    _check(bytes(buf))


@settings(max_examples=200, deadline=None)
@given(width=st.integers(2, 12), lead=st.integers(0, 7),
       values=st.lists(st.integers(0, 2**40), min_size=2, max_size=300), data=st.data())
def test_skip_vbrs_agrees_with_vbr(width: int, lead: int, values: list[int],
                                   data: st.DataObject) -> None:
    w = BitWriter()
    w.emit(0, lead)  # any bit phase
    for v in values:
        w.vbr(v, width)
    raw = w.data()
    k = data.draw(st.integers(0, len(values) - 1))
    bits = bc.Bits(Reader(raw), 0, len(raw))
    bits.read(lead)
    bits.skip_vbrs(width, k)
    assert bits.vbr(width) == values[k]
