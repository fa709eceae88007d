"""The ar reader on hand-assembled archives: layouts per docs/binary-formats.md §1, and hostile
headers.

Real archives from GNU ar and llvm-ar are covered in tests/integration/test_inspect_archive.py;
here each byte-level rule (padding, name tables, both index layouts, COFF's second linker
member) is pinned down on the smallest input that exercises it.
"""

from __future__ import annotations

import struct

import pytest

from prebake.errors import FormatError
from prebake.inspect import ParseOptions, inspect_bytes
from prebake.inspect.archive import IndexKind, read_archive, summarise
from prebake.inspect.binreader import Truncated
from prebake.inspect.facts import Facts


def header(name: str, size: int) -> bytes:
    h = f"{name:<16}{0:<12}{0:<6}{0:<6}{644:<8}{size:<10}`\n".encode()
    assert len(h) == 60
    return h


def member(name: str, data: bytes) -> bytes:
    return header(name, len(data)) + data + (b"\n" if len(data) % 2 else b"")


def gnu_archive(members: list[tuple[str, bytes]], symbols: list[tuple[str, int]] | None = None,
                magic: bytes = b"!<arch>\n") -> bytes:
    """GNU layout: ``/`` index (offsets filled in for member numbers), ``//`` for long names."""
    longnames = b""
    names = []
    for name, _ in members:
        if len(name) > 15:
            names.append(f"/{len(longnames)}")
            longnames += name.encode() + b"/\n"
        else:
            names.append(name + "/")
    body = member("//", longnames) if longnames else b""
    index = b""
    if symbols is not None:
        # index size is known up front: count + offsets + names
        isize = 4 + 4 * len(symbols) + sum(len(s) + 1 for s, _ in symbols)
        first = len(magic) + 60 + isize + (isize & 1) + len(body)
        offsets = []
        pos = first
        for (_, data), _n in zip(members, names, strict=True):
            offsets.append(pos)
            pos += 60 + len(data) + (len(data) & 1)
        raw = struct.pack(">I", len(symbols))
        raw += b"".join(struct.pack(">I", offsets[i]) for _, i in symbols)
        raw += b"".join(s.encode() + b"\0" for s, _ in symbols)
        index = member("/", raw)
    return magic + index + body + b"".join(
        member(n, d) for n, (_, d) in zip(names, members, strict=True)
    )


def test_gnu_long_names_odd_sizes_and_index() -> None:
    ar = gnu_archive(
        [("a.o", b"abc"), ("a_very_long_member_name_for_gnu.o", b"12345"), ("a.o", b"xy")],
        symbols=[("alpha", 0), ("beta", 1), ("gamma", 2)],
    )
    parsed = read_archive(ar)
    assert [m.name for m in parsed.members] == ["a.o", "a_very_long_member_name_for_gnu.o", "a.o"]
    assert [bytes(ar[m.data_off : m.data_off + m.size]) for m in parsed.members] == [
        b"abc", b"12345", b"xy"]
    assert all(m.header_off % 2 == 0 for m in parsed.members)
    assert parsed.index_kind == IndexKind.GNU32
    by_off = {m.header_off: i for i, m in enumerate(parsed.members)}
    # duplicate names are told apart by header offset, never by name
    assert [(s, by_off[o]) for s, o in parsed.index] == [("alpha", 0), ("beta", 1), ("gamma", 2)]


def test_bsd_names_and_symdef() -> None:
    strtab = b"alpha\0beta\0"
    payload = b"a.o\0" + b"DATA"
    # member header offsets: magic(8) + symdef member; computed below
    symdef_name = b"__.SYMDEF\0\0\0"
    ranlib = struct.pack("<I", 16)
    symdef_len = len(symdef_name) + 4 + 16 + 4 + len(strtab)
    first = 8 + 60 + symdef_len + (symdef_len & 1)
    ranlib += struct.pack("<II", 0, first) + struct.pack("<II", 6, first)
    symdef = symdef_name + ranlib + struct.pack("<I", len(strtab)) + strtab
    ar = b"!<arch>\n" + member(f"#1/{len(symdef_name)}", symdef) + member("#1/4", payload)
    parsed = read_archive(ar)
    assert [m.name for m in parsed.members] == ["a.o"]
    m = parsed.members[0]
    assert bytes(ar[m.data_off : m.data_off + m.size]) == b"DATA"  # name bytes excluded
    assert parsed.index_kind == IndexKind.BSD
    assert parsed.index == [("alpha", first), ("beta", first)]


def test_thin_members_have_no_data_and_coff_second_linker_member() -> None:
    thin = b"!<thin>\n" + member("//", b"a.o/\n") + header("/0", 5000)
    parsed = read_archive(thin)
    assert parsed.thin and parsed.members[0].name == "a.o" and parsed.members[0].size == 5000
    first = member("/", struct.pack(">I", 0))
    second = member("/", struct.pack("<I", 0) + struct.pack("<I", 0))
    coff = b"!<arch>\n" + first + second + member("x.obj/", b"zz")
    parsed = read_archive(coff)
    assert parsed.linker_members == 2
    assert [m.name for m in parsed.members] == ["x.obj"]


@pytest.mark.parametrize(
    ("blob", "words"),
    [
        (b"!<arch>\n" + header("a.o/", 100) + b"short", "declares 100 bytes"),
        (b"!<arch>\n" + header("a.o/", 2)[:58] + b"XX" + b"ab", "bad terminator"),
        (b"!<arch>\n" + header("/99", 2) + b"ab", "long name offset"),
        (b"!<arch>\n" + header("#1/50", 4) + b"a.o\0", "BSD name length"),
        (b"!<arch>\n" + header("a.o/", 2)[:48] + b"12x4567890`\n" + b"ab", "not a number"),
        (b"!<arch>\n" + header("a.o/", 2)[:48] + b"1_2       `\n" + b"ab", "not a number"),
        (b"!<arch>\n" + header("a.o/", 2)[:48] + b"+2        `\n" + b"ab", "not a number"),
        (b"!<arch>\n" + member("/", struct.pack(">I", 0xFFFFFFFF)), "symbol index"),
        (b"!<arch>\n" + b"x" * 30, "cut short"),
    ],
)
def test_hostile_headers_raise_truncated(blob: bytes, words: str) -> None:
    with pytest.raises(Truncated, match=words):
        read_archive(blob)
    with pytest.raises(FormatError, match=r"lib\.a: "):
        inspect_bytes(blob, "lib.a")


def test_non_binary_member_is_reported_not_fatal() -> None:
    ar = gnu_archive([("note.txt", b"hello")])
    f = inspect_bytes(ar, "lib.a")
    assert f.format == "archive"
    assert f.members is not None and f.members[0].error is not None
    assert "not a binary format" in f.members[0].error
    assert f.details["errors"] == {"note.txt": f.members[0].error}


@pytest.mark.parametrize("bad", [[], [7], [7, 7, 9], [9, 7, 9]])
def test_index_entries_pointing_at_no_member_make_the_archive_an_error(bad: list[int]) -> None:
    """An index entry that lands on no member header the walk found (inside another member's
    data, past the end) is what a linker would follow and prebake would not read: the archive
    is an error naming the first such entry, never facts of the members it did read."""
    syms = [("a", 0), ("b", 0), ("c", 1), ("d", 0)] + [(f"x{i}", 0) for i in range(len(bad))]
    ar = bytearray(gnu_archive([("a.txt", b"one"), ("b.txt", b"two!")], syms))
    at = 8 + 60 + 4 + 4 * 4  # the first extra offset, after the count and four real ones
    for i, off in enumerate(bad):
        ar[at + 4 * i : at + 4 * i + 4] = struct.pack(">I", off)
    if not bad:
        f = inspect_bytes(bytes(ar), "lib.a")
        assert f.details["index"] == {"kind": "gnu", "symbols": len(syms)}
        return
    for opts in (ParseOptions(), ParseOptions(symbols=True)):
        with pytest.raises(FormatError) as err:
            inspect_bytes(bytes(ar), "lib.a", opts)
        assert f"entry 4 ('x0') points at offset {bad[0]}," in err.value.reason
        assert f"({len(set(bad))} such offset" in err.value.reason


def _m(name: str, **abi: object) -> Facts:
    f = Facts(path=f"lib.a({name})", format="elf", kind="object", os="linux", arch="x86_64")
    f.details["member"] = name
    for k, v in abi.items():
        setattr(f.abi, k, v)
    return f


def test_summary_common_mixed_highest_and_counts() -> None:
    members = [
        _m("a.o", eh="native", lto="none", glibc_max="2.28"),
        _m("b.o", eh="none", lto="none", glibc_max="2.38"),
        _m("c.o", eh="none", lto="none", glibc_max=None),
    ]
    f = Facts(path="lib.a", format="archive")
    summarise(f, members)
    assert (f.arch, f.os) == ("x86_64", "linux")
    # EH-free members do not make an archive "mixed"; the counts still show them
    assert f.abi.eh == "native" and f.counts["eh"] == {"native": 1, "none": 2}
    assert f.abi.lto == "none" and "lto" not in f.counts
    assert f.abi.glibc_max == "2.38"
    assert f.counts["glibc_max"] == {"2.28": 1, "2.38": 1}
    assert any("b.o" in e for e in f.evidence["glibc_max"])
    assert any(e.startswith("native: a.o") for e in f.evidence["eh"])


def test_summary_unknown_members_do_not_make_mixed() -> None:
    members = [_m("a.o", eh="wasm"), _m("b.o", eh=None)]
    f = Facts(path="lib.a", format="archive")
    summarise(f, members)
    assert f.abi.eh == "wasm"
    assert f.counts["eh"] == {"wasm": 1, "null": 1}


def test_summary_wasm_features_union_and_partial_counts() -> None:
    members = [_m("a.o", wasm_features=["simd128", "atomics"], threads=True),
               _m("b.o", wasm_features=["atomics"], threads=False)]
    f = Facts(path="lib.a", format="archive")
    summarise(f, members)
    assert f.abi.wasm_features == ["atomics", "simd128"]
    assert f.counts["wasm_features"] == {"simd128": 1}
    assert f.abi.threads is True and f.counts["threads"] == {"True": 1, "False": 1}
