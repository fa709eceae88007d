"""Bounds-checked reads: every access past the end is a ``Truncated``, never a big allocation."""

from __future__ import annotations

import struct

import pytest

from prebake.inspect.binreader import Reader, Truncated, cstring_at, names_at, table


def test_reader_reads_both_byte_orders() -> None:
    data = bytes(range(16))
    le, be = Reader(data), Reader(data, le=False)
    assert le.u16(0) == 0x0100 and be.u16(0) == 0x0001
    assert le.u32(4) == 0x07060504 and be.u32(4) == 0x04050607
    assert le.u64(8) == int.from_bytes(data[8:16], "little")
    assert le.bytes(2, 3) == b"\x02\x03\x04"
    assert bytes(le.view(14, 2)) == b"\x0e\x0f"


@pytest.mark.parametrize("call", [
    lambda r: r.u8(8), lambda r: r.u16(7), lambda r: r.u32(5), lambda r: r.u64(1),
    lambda r: r.bytes(4, 5), lambda r: r.bytes(-1, 1), lambda r: r.view(0, 9),
    lambda r: r.cstr(8), lambda r: r.cstr(0),  # no terminator in range
])
def test_reads_past_the_end_raise(call: object) -> None:
    r = Reader(b"abcdefgh")
    with pytest.raises(Truncated):
        call(r)  # type: ignore[operator]


def test_table_checks_declared_count_before_allocating() -> None:
    st = struct.Struct("<II")
    data = struct.pack("<IIII", 1, 2, 3, 4)
    assert table(data, 0, 2, st) == [(1, 2), (3, 4)]
    assert table(data, 0, 0, st) == []
    with pytest.raises(Truncated):
        table(data, 0, 3, st)
    with pytest.raises(Truncated):
        table(data, 0, 2**62, st)  # a hostile count costs nothing
    with pytest.raises(Truncated):
        table(data, -8, 1, st)
    assert table(memoryview(data), 8, 1, st) == [(3, 4)]


def test_names_at_ascii_unicode_and_out_of_range() -> None:
    tab = b"\0alpha\0beta\0"
    assert names_at(tab, [1, 7, 3, 0, 99]) == ["alpha", "beta", "pha", "", ""]
    assert names_at(b"\0unterminated", [1]) == ["unterminated"]
    uni = "\0grüß\0x\0".encode()
    assert names_at(uni, [1, len("\0grüß\0".encode())]) == ["grüß", "x"]
    assert cstring_at(b"\xff\xfe\0", 0) == "\ufffd\ufffd"
    assert cstring_at(b"abc", 5) == ""
