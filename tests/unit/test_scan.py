"""The readers' C loops (``prebake.inspect._scan``) answer what their Python reference
(``prebake.inspect.hotloops_py``) answers.

The extension is optional for users (no compiler: ``hotloops.scan`` is the Python module), but
this suite is run where it is built, so a missing build fails here instead of silently
testing only one side. Each C function is held to its Python twin on generated hostile
input (both ELF classes and byte orders, offsets past the table, names without their NUL),
and the whole reader to itself with either in ``hotloops.scan`` on real archives, facts and
symbols.
"""

from __future__ import annotations

import struct
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prebake.errors import FormatError
from prebake.inspect import (
    ParseOptions,
    elf,
    glibc,
    hotloops,
    hotloops_py,
    inspect,
    wasm,
    wasm_code,
)
from prebake.inspect.binreader import Reader, Truncated
from prebake.inspect.render import json_pieces

try:
    from prebake.inspect import _scan as scan
except ImportError:  # reported by the first test
    scan = hotloops_py  # type: ignore[assignment]


def test_the_extension_is_built() -> None:
    """scripts/bootstrap installs a compiler and Python's headers: the build must happen."""
    assert hotloops.BUILT and hotloops.scan is scan and scan is not hotloops_py, \
        "prebake.inspect._scan is not built (see setup.py)"


@pytest.fixture
def pure(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The readers with the Python loops (the renderer's demangling cache emptied)."""
    from prebake.inspect import render

    render._demangled.clear()
    monkeypatch.setattr(hotloops, "scan", hotloops_py)
    yield
    render._demangled.clear()


# -- symbols ----------------------------------------------------------------------------------

entry = st.tuples(
    st.integers(0, 70),  # st_name: offsets past a short table included
    st.integers(0, 255),  # st_info: every binding and type
    st.integers(0, 255),  # st_other: every visibility
    st.sampled_from([0, 1, 0xFFF1, 0xFFF2, 0x100, 0xFFFF]),  # st_shndx
)
strtab_st = st.lists(
    st.sampled_from([b"", b"a", b"_ZN3fooEv", b"caf\xc3\xa9", b"\xff\xfe", b"memcpy", b"x" * 9]),
    max_size=8,
).map(b"\0".join).flatmap(lambda t: st.sampled_from([t, t + b"\0", b"\0" + t + b"\0"]))


def _symtab_bytes(rows: list[tuple[int, int, int, int]], is64: bool, little: bool) -> bytes:
    e = "<" if little else ">"
    if is64:
        return b"".join(struct.pack(e + "IBBHQQ", n, i, o, s, 0, 0) for n, i, o, s in rows)
    return b"".join(struct.pack(e + "IIIBBH", n, 0, 0, i, o, s) for n, i, o, s in rows)


@settings(max_examples=500, deadline=None)
@given(st.lists(entry, max_size=12), strtab_st, st.booleans(), st.booleans(),
       st.integers(0, 23))
def test_object_symbols_match_the_python_loop(
    rows: list[tuple[int, int, int, int]], strtab: bytes, is64: bool, little: bool, cut: int
) -> None:
    raw = _symtab_bytes(rows, is64, little)
    raw = raw[: max(0, len(raw) - cut)]  # a table cut inside its last entry
    assert scan.object_symbols(raw, strtab, is64, little) == hotloops_py.object_symbols(
        raw, strtab, is64, little)


# -- the probe, the marks, the section types --------------------------------------------------

CANDS = sorted(glibc.table("x86_64").keys() | {m.encode() for m in elf.EH_MARKERS}
               | {elf.GCC_LTO_SLIM.encode(), b"personality_v0"})
probe_piece = st.one_of(
    st.sampled_from(CANDS),
    st.sampled_from(CANDS).flatmap(lambda n: st.integers(1, len(n) - 1).map(lambda i: n[i:])),
    st.sampled_from(CANDS).flatmap(lambda n: st.integers(1, len(n) - 1).map(lambda i: n[:i])),
    st.binary(max_size=10),  # NULs included: names cut anywhere
)


PROBE = elf._Probe(set(CANDS))


@settings(max_examples=500, deadline=None)
@given(st.lists(probe_piece, max_size=10).map(b"".join))
def test_probe_matches_the_brute_force(table: bytes) -> None:
    """The probe is exact both ways: some candidate followed by a NUL occurs, or none does."""
    want = any(n + b"\0" in table for n in CANDS)
    for impl in (scan, hotloops_py):
        assert impl.probe(table, PROBE.bitmap, PROBE.tails) == want
        assert impl.probe(memoryview(table), PROBE.bitmap, PROBE.tails) == want


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([b".gnu.lto_", b".gcc_except_table", b".note.GNU-stack\0",
                                 b"St3__1", b"St7__cxx11", b"St3_", b".gnu", b"\0", b"x"]),
                max_size=10).map(b"".join))
def test_occurs_is_a_substring_test(text: bytes) -> None:
    needles = (*elf._MARK_TEXTS, *elf._NAMESPACE_TEXTS)
    found = scan.occurs(text, needles)
    assert [bool(found >> i & 1) for i in range(len(needles))] == [n in text for n in needles]
    assert hotloops_py.occurs(text, needles) == found


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 2**32 - 1), max_size=20), st.sampled_from([40, 64]),
       st.booleans(), st.sampled_from([elf.SHT.SYMTAB, elf.SHT.DYNAMIC, 0x6FFFFF02, 0x102]))
def test_first_type_finds_the_first_header_of_a_type(
    types: list[int], entsize: int, little: bool, want: int
) -> None:
    """0x102 and 0x6FFFFF02 share SYMTAB's low byte: only the whole sh_type may match."""
    e = "<" if little else ">"
    table = b"".join(struct.pack(e + "II", 0, t) + bytes(entsize - 8) for t in types)
    data = b"pad!" + table
    for impl in (scan, hotloops_py):
        got = impl.first_type(data, 4, len(types), entsize, little, want)
        assert got == next((i for i, t in enumerate(types) if t == want), -1)
        with pytest.raises(ValueError):
            impl.first_type(data, 5, len(types) + 1, entsize, little, want)  # past the end



NAMES = (b"\0.text\0.comment\0x.comment\0.comment.x\0.note.GNU-stack\0", b".comment", b"",
         b"\0.comm", b"\0" + b".comment\0" * 3)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from([0, 1, 7, 8, 17, 19, 20, 27, 29, 61, 2**31, 2**32 - 1])
                | st.integers(0, 70), max_size=20),
       st.sampled_from(NAMES), st.sampled_from([b".comment\0", b".note.GNU-stack\0", b"\0"]),
       st.sampled_from([40, 64]), st.booleans())
def test_named_finds_every_header_whose_name_begins_there(
    offsets: list[int], names: bytes, name: bytes, entsize: int, little: bool
) -> None:
    """Offsets past the table, at its last bytes, into a longer name's tail (``x.comment``
    at 18 names ``.comment`` from 19) and the head of a longer one (``.comment.x``), 2**31
    (negative in a 32-bit ``Py_ssize_t``): a header matches exactly where the bytes from its
    ``sh_name`` on are ``name`` with its NUL."""
    e = "<" if little else ">"
    table = b"".join(struct.pack(e + "I", off) + bytes(entsize - 4) for off in offsets)
    want = [i for i, off in enumerate(offsets) if names[off : off + len(name)] == name]
    for impl in (scan, hotloops_py):
        assert impl.named(table, len(offsets), entsize, little, names, name) == want
        assert impl.named(memoryview(table), len(offsets), entsize, little,
                          memoryview(names), name) == want
        with pytest.raises(ValueError):
            impl.named(table, len(offsets) + 1, entsize, little, names, name)  # past the end
        with pytest.raises(ValueError):
            impl.named(table, 1, 42, little, names, name)  # not a multiple of 4
        assert impl.named(b"", 0, 0, little, names, name) == []  # no table

# -- the whole reader, with and without the extension, on real archives -----------------------

REAL = ["/usr/lib/llvm-14/lib/libLLVMSupport.a", "/usr/lib/llvm-14/lib/libLLVMDemangle.a",
        "/usr/lib/gcc/x86_64-linux-gnu/12/libstdc++.a", "/usr/lib/x86_64-linux-gnu/libc.a",
        "/usr/lib/x86_64-linux-gnu/libabsl_strings.a", "/usr/lib/x86_64-linux-gnu/libc.so.6"]


def _json(path: str, symbols: bool) -> str:
    parts: list[str] = []
    facts = inspect(Path(path), ParseOptions(symbols=symbols, deep=False, archive_lists=True))
    json_pieces(facts, parts.append, symbols=symbols)
    return "".join(parts)


def _symbol_text(path: str) -> str:
    from prebake.inspect.render import text_pieces

    parts: list[str] = []
    facts = inspect(Path(path), ParseOptions(symbols=True, deep=False, archive_lists=False))
    text_pieces(facts, parts.append, symbols=True, color=False)
    return "".join(parts)


def test_the_symbol_lines_are_the_same_with_either_loops(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    paths = [p for p in REAL[:3] if Path(p).exists()]
    if not paths:
        pytest.skip("the Debian archives scripts/bootstrap installs are missing")
    from prebake.inspect import render

    render._demangled.clear()
    fast = [_symbol_text(p) for p in paths]
    render._demangled.clear()
    monkeypatch.setattr(hotloops, "scan", hotloops_py)
    slow = [_symbol_text(p) for p in paths]
    render._demangled.clear()
    assert fast == slow
    assert all("  T " in t and "  U " in t for t in fast)
    assert "llvm::" in fast[0] or "std::" in fast[0]  # demangled forms are there


@pytest.mark.parametrize("symbols", [False, True], ids=["facts", "symbols"])
def test_the_reader_says_the_same_with_either_loops(
    symbols: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from prebake.inspect import render

    paths = [p for p in REAL if Path(p).exists()]
    if len(paths) < 3:
        pytest.skip("the Debian archives scripts/bootstrap installs are missing")
    render._demangled.clear()
    fast = [_json(p, symbols) for p in paths]
    render._demangled.clear()
    monkeypatch.setattr(hotloops, "scan", hotloops_py)
    slow = [_json(p, symbols) for p in paths]
    render._demangled.clear()
    assert fast == slow
    assert all('"eh"' in text for text in fast)  # a real result each time


def test_the_probe_answers_alike_both_ways(pure: None) -> None:
    probe = elf._probe("x86_64")
    assert probe.hit(b"\0foo\0memfd_create\0") is True
    assert probe.hit(b"\0foo\0memfd_createx\0") is False


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(max_size=12), max_size=12))
def test_fill_demangled_matches_the_python_loop(names: list[str]) -> None:
    from prebake.inspect import demangle

    impl = demangle._impl()
    if impl is None or not impl.address:
        pytest.skip("no C++ runtime demangler here")
    names = [*names, "_Z1fv", "__ZN3foo3barEv", "_Zbad", "_Z1fv"]
    fast: dict[str, str | None] = {}
    slow: dict[str, str | None] = {}
    scan.fill_demangled(fast, names, impl.address, 5)
    hotloops_py.fill_demangled(slow, names, impl.address, 5)
    assert fast == slow


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 40), max_size=30), st.sets(st.integers(0, 40), max_size=8),
       st.sampled_from(["I", "L", "Q"]))
def test_dangling_counts_distinct_offsets_outside_the_heads(
    offsets: list[int], heads: set[int], code: str
) -> None:
    from array import array

    from prebake.inspect import archive

    arr = array(code, sorted(offsets) if len(offsets) % 2 else offsets)  # runs, or not
    want = len(set(arr) - heads)
    assert scan.dangling(arr, heads) == want == archive._dangling(list(arr), heads)
    assert hotloops_py.dangling(arr, heads) == want
    with pytest.raises(TypeError):
        scan.dangling(array("d", [1.0]), heads)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=60), st.integers(-3, 70))
def test_count_byte_counts_from_an_offset(data: bytes, start: int) -> None:
    for impl in (scan, hotloops_py):
        assert impl.count_byte(data, 0, start) == data[max(0, start):].count(b"\0")
        assert impl.count_byte(memoryview(data), 7, start) == data[max(0, start):].count(b"\7")


@pytest.mark.parametrize("needle", [b"St3__1", b"St7__cxx11", b".gnu.lto_", b"ab", b"a"])
def test_occurs_finds_a_needle_at_every_position_of_the_vector_blocks(needle: bytes) -> None:
    """The SSE2 search reads 16 positions at a time and leaves the last ones to memmem: a
    needle is found at every offset, straddling blocks, at the very end, and near misses
    (first and last bytes right, the middle wrong) are not."""
    filler = bytes(range(97, 97 + 26)) * 3  # "abc…z" without the needles' rarer bytes
    for size in (len(needle), 17, 31, 48, 70):
        for at in range(max(1, size - len(needle) + 1)):
            text = bytearray(b"." * size)
            text[at:at + len(needle)] = needle
            assert scan.occurs(bytes(text[:size]), (needle,)) == 1, (size, at)
            if len(needle) > 2:
                text[at + 1] ^= 0x20
                assert scan.occurs(bytes(text[:size]), (needle,)) == 0, (size, at)
    assert scan.occurs(filler.replace(b"ab", b"xy"), (b"ab",)) == 0


def test_probe_sees_a_name_ending_at_every_position_of_the_vector_blocks() -> None:
    probe = elf._probe("x86_64")
    name = b"__cxa_throw"
    for size in range(len(name) + 1, 60):
        for end in range(len(name), size):
            table = bytearray(b"x" * size)
            table[end - len(name):end] = name
            table[end] = 0
            assert probe.hit(bytes(table)) is True, (size, end)
            table[end - len(name)] = ord("y")  # _cxa_throw with another first byte
            assert probe.hit(bytes(table)) is False, (size, end)


# --------------------------------------------------------------------------------------------
# the probe's constants: one definition (_scan_consts.h) for the C probe and its Python twin

_CONST_NAMES = ("PROBE_TAIL", "PROBE_HASH_MUL", "PROBE_HASH_BITS", "PROBE_BITMAP_BYTES")


def test_the_extension_was_built_with_the_constants_python_reads() -> None:
    """The built module reports the header it was compiled with; the Python twin read the
    same file at import: a stale build or a second definition shows here."""
    assert {n: getattr(scan, n) for n in _CONST_NAMES} == \
        {n: getattr(hotloops_py, n) for n in _CONST_NAMES}
    assert hotloops_py.PROBE_BITMAP_BYTES * 8 == 1 << hotloops_py.PROBE_HASH_BITS


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=4, max_size=4), st.binary(max_size=12))
def test_the_c_probe_hashes_a_tail_as_tail_hash_does(tail: bytes, before: bytes) -> None:
    """A bitmap with only ``tail_hash(tail)``'s bit set lets the C probe find the name; with
    every other bit set it never looks: the C hash is the Python one, tail by tail."""
    assert len(tail) == hotloops_py.PROBE_TAIL
    name = before.replace(b"\0", b"") + tail
    if b"\0" in tail:
        return  # a name holds no NUL
    h = hotloops_py.tail_hash(tail)
    only = bytearray(hotloops_py.PROBE_BITMAP_BYTES)
    only[h >> 3] |= 1 << (h & 7)
    others = bytes(b ^ 0xFF for b in only)
    table = b"\0" + name + b"\0"
    assert scan.probe(table, bytes(only), {tail: (name,)}) is True
    assert scan.probe(table, others, {tail: (name,)}) is False


def test_a_bitmap_of_another_size_is_refused() -> None:
    with pytest.raises(ValueError, match=f"{hotloops_py.PROBE_BITMAP_BYTES} bytes"):
        scan.probe(b"\0abcd\0", bytes(hotloops_py.PROBE_BITMAP_BYTES - 1), {b"abcd": (b"abcd",)})


@pytest.mark.parametrize("edit", [
    lambda s: s.replace("#define PROBE_TAIL 4\n", ""),  # a name missing
    lambda s: s + "#define PROBE_TAIL 5\n",  # a name twice
    lambda s: s + "#define PROBE_EXTRA 1\n",  # a name nobody reads
    lambda s: s.replace("PROBE_BITMAP_BYTES 8192", "PROBE_BITMAP_BYTES 4096"),  # no bit per hash
    lambda s: s.replace("PROBE_TAIL 4", "PROBE_TAIL 0x4"),  # not decimal
    lambda s: s.replace("PROBE_TAIL 4", "PROBE_TAIL 4 /* tail */"),  # not two words
])
def test_a_header_python_cannot_read_whole_is_an_import_error(
        tmp_path: Path, edit: Callable[[str], str]) -> None:
    header = Path(hotloops_py.__file__).with_name("_scan_consts.h").read_text()
    assert hotloops_py._probe_constants(Path(hotloops_py.__file__).with_name("_scan_consts.h"))
    bad = tmp_path / "_scan_consts.h"
    bad.write_text(edit(header))
    with pytest.raises(ImportError, match=r"_scan_consts\.h"):
        hotloops_py._probe_constants(bad)


# -- wasm -------------------------------------------------------------------------------------
#
# The wasm loops answer None for what they cannot read to its end (the deep decode: the index
# of the body it cannot read), and the reader's own Python (wasm_code.decode_bodies_py,
# scan_locals_py, wasm._parse_imports, parse_types, parse_symbols) is their reference: on any
# bytes, the C gives up exactly where the Python raises, and otherwise gives the Python's
# answer. One exception: imports in the compact encoding or of a custom page size (proposals
# after 3.0, which wasm-tools makes by default) are left to the Python, which reads them.

# Debian 12's Emscripten sysroot (scripts/bootstrap installs emscripten): C++ with wasm
# exceptions (-except), without, and C with wasm setjmp/longjmp, each a real archive of objects.
WASM_SYSROOT = Path("/usr/share/emscripten/cache/sysroot/lib/wasm32-emscripten")
REAL_WASM = [WASM_SYSROOT / n for n in ("libc++-mt-except.a", "libc++abi-except.a",
                                        "libc++-noexcept.a", "libcompiler_rt-wasm-sjlj.a")]


@pytest.mark.parametrize("symbols", [False, True], ids=["facts", "symbols"])
def test_the_wasm_reader_says_the_same_with_either_loops(
    symbols: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from prebake.inspect import render

    missing = [str(p) for p in REAL_WASM if not p.exists()]
    assert not missing, f"Debian's emscripten sysroot lacks {missing} (scripts/bootstrap)"
    render._demangled.clear()
    fast = [_json(str(p), symbols) for p in REAL_WASM]
    render._demangled.clear()
    monkeypatch.setattr(hotloops, "scan", hotloops_py)
    slow = [_json(str(p), symbols) for p in REAL_WASM]
    render._demangled.clear()
    assert fast == slow
    assert '"wasm_eh_encoding": "legacy"' in fast[0] and '"wasm_eh_encoding": "none"' in fast[2]


def _member_objects(path: Path, limit: int = 40) -> list[bytes]:
    """The first wasm objects of an ar archive, as bytes (a test's own plain walk)."""
    data = path.read_bytes()
    pos, out = 8, list[bytes]()
    while pos + 60 <= len(data) and len(out) < limit:
        size = int(data[pos + 48:pos + 58])
        body = data[pos + 60:pos + 60 + size]
        if body[:4] == b"\0asm":
            out.append(body)
        pos += 60 + size + (size & 1)
    return out


def _sections(data: bytes) -> dict[int, tuple[int, int]]:
    out: dict[int, tuple[int, int]] = {}
    for sid, nm, start, end in wasm._sections_py(Reader(data)):
        out.setdefault(-1 if nm == "linking" else sid, (start, end))
    return out


def _python(fn: Callable[[], object]) -> object:
    """The reference's answer, or None where it raises (what the C answers then)."""
    try:
        return fn()
    except (Truncated, FormatError, ValueError, IndexError):
        return None


def _twins(data: bytes) -> list[tuple[str, object, object]]:
    """(what, C, Python) for every wasm loop over one object's sections."""
    secs = _sections(data)
    out: list[tuple[str, object, object]] = []
    r = Reader(data)
    out.append(("sections", scan.wasm_sections(data, wasm._RANKS, wasm._NAMES),
                _python(lambda: wasm._sections_py(r))))
    if 2 in secs:
        s, e = secs[2]

        def imports() -> object:
            m = wasm.Module()
            wasm._parse_imports(m, wasm._Cur(r, s, e))
            return m.imports

        fast = scan.wasm_imports(data, s, e, wasm_code.type_tables())
        slow = _python(imports)
        got = None if fast is None else [wasm.Import(*t) for t in fast]
        if got is None and slow is not None and _left_to_python(data, s, e):
            got = slow  # type: ignore[assignment]
        out.append(("imports", got, slow))
    if 1 in secs:
        s, e = secs[1]

        def types() -> object:
            t = wasm.parse_types(wasm._Cur(r, s, e))
            return (t.types, t.v128, t.exnref, t.multivalue, t.recs, t.subtypes, t.structs,
                    t.arrays, _family_counts(t.uses))

        out.append(("types", scan.wasm_types(data, s, e, wasm_code.type_tables()),
                    _python(types)))
    if 11 in secs:
        s, e = secs[11]
        fast_data = scan.wasm_data(data, s, e)
        slow_data = _python(lambda: _plain_data(data, s, e))
        if fast_data is None and slow_data == "other offsets":
            fast_data = slow_data  # left to the Python, which reads it
        out.append(("data", fast_data, slow_data))
    if 10 in secs:
        s, e = secs[10]
        loc = _python(lambda: wasm_code.scan_locals_py(data, s, e, True))
        out.append(("locals", scan.wasm_locals(data, s, e),
                    None if loc is None else (loc.functions, loc.v128_locals,  # type: ignore
                                              loc.exnref_locals, loc.bodies)))  # type: ignore
        if loc is not None:
            bodies = loc.bodies  # type: ignore[attr-defined]
            deep = _python(lambda: wasm_code.decode_bodies_py(data, bodies))
            fast_deep = scan.wasm_deep_scan(data, bodies, *wasm_code.deep_tables())
            out.append(("deep", None if isinstance(fast_deep, int) else fast_deep,
                        None if deep is None else _family_counts(deep.counts)))  # type: ignore
    if -1 in secs:
        m = _python(lambda: wasm.parse_container(Reader(data)))
        if m is not None:
            def linked() -> object:
                got = wasm.linked_symbols(r, m)  # type: ignore[arg-type]
                return None if got is None else got
            s, e = secs[-1]
            f, g, t, tb = ([i.field for i in m.imports_of(k)]  # type: ignore[attr-defined]
                           for k in (0, 3, 4, 1))
            imports_ = (f, g, t, tb)
            py = _python(lambda: wasm.parse_symbols(r, m))  # type: ignore[arg-type]
            want = None
            if py is not None:
                syms = wasm._symbols_of_object(py)  # type: ignore[arg-type]
                want = (syms.defined, syms.undefined, syms.exports, syms.weak,
                        [x.name for x in py if x.undefined], {x.name for x in py})  # type: ignore
            out.append(("symbols", scan.wasm_symbols(data, s, e, imports_), want))
    return out


def _plain_data(data: bytes, start: int, end: int) -> object:
    """The reference's reading of a data section in the C loop's terms: (segments, passive)
    when every offset is a plain ``i32/i64.const N end``, "other offsets" when some is not
    (the C leaves those to the Python); raises where the Python does."""
    c = wasm._Cur(Reader(data), start, end)
    wasm._parse_data(wasm.Module(), c)  # raises what the reference raises
    wasm._exact(c, "Data")
    c.pos = start
    n, passive, plain = c.count(), 0, True
    for _ in range(n):
        flags = c.uleb()
        if flags == 1:
            passive += 1
        else:
            if flags == 2:
                c.skip_leb()
            first = c.u8()
            c.skip_leb()
            plain = plain and first in (0x41, 0x42) and c.u8() == 0x0B
            if not plain:
                return "other offsets"
        c.skip(c.uleb())
    return (n, passive)


def _family_counts(counts: Counter[str]) -> tuple[int, ...]:
    """The Python's family counts in the C loop's shape: one per family, in ``FAMILIES``'
    order, padded to 32 (a family the Python counted that FAMILIES lacks would fail the
    comparison)."""
    out = tuple(counts.get(f, 0) for f in wasm_code.FAMILIES)
    assert sum(out) == sum(counts.values()), "a family the C tables do not name"
    return out + (0,) * (32 - len(out))


def _left_to_python(data: bytes, start: int, end: int) -> bool:
    """Whether the import section holds what the C leaves to the Python: compact imports or a
    memory of a custom page size."""
    m = wasm.Module()
    wasm._parse_imports(m, wasm._Cur(Reader(data), start, end))
    return "compact-imports" in m.needs or any(i.page_size for i in m.imports)


@pytest.fixture(scope="module")
def wasm_objects() -> list[bytes]:
    objects = [o for p in REAL_WASM[:2] if p.exists() for o in _member_objects(p, 25)]
    if not objects:
        pytest.fail(f"no wasm objects in {REAL_WASM[:2]} (scripts/bootstrap installs emscripten)")
    return objects


def test_the_wasm_loops_agree_on_real_objects(wasm_objects: list[bytes]) -> None:
    seen = set()
    for data in wasm_objects:
        for what, fast, slow in _twins(data):
            assert fast == slow, what
            assert fast is not None, f"{what}: the C loop gave up on a real object"
            seen.add(what)
    assert seen == {"sections", "imports", "types", "data", "locals", "deep", "symbols"}


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_the_wasm_loops_agree_on_hostile_objects(wasm_objects: list[bytes],
                                                 data: st.DataObject) -> None:
    """A real object cut short, or with bytes overwritten inside one of its sections: the C
    gives up (None) exactly where the Python raises, and otherwise answers the same."""
    obj = bytearray(data.draw(st.sampled_from(wasm_objects)))
    secs = list(_sections(bytes(obj)).values())
    start, end = data.draw(st.sampled_from(secs))
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(start, max(start, end - 1)))
        obj[at] = data.draw(st.sampled_from([0x00, 0x01, 0x0B, 0x40, 0x63, 0x69, 0x7F, 0x80,
                                              0xFC, 0xFD, 0xFE, 0xFF]))
    cut = data.draw(st.sampled_from([len(obj), end, (start + end) // 2]))
    blob = bytes(obj[:cut])
    try:
        twins = _twins(blob)
    except Exception:  # the test's own section walk cannot read it: nothing to compare
        return
    for what, fast, slow in twins:
        assert fast == slow, what
