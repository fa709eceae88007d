"""Edges of the C loops that the readers guard today, held directly: a guard lost in a later
refactor must not turn into a read outside a buffer, or into the two paths disagreeing."""

from __future__ import annotations

import struct
from types import ModuleType

import pytest

from prebake.errors import FormatError
from prebake.inspect import ParseOptions, elf, hotloops, hotloops_py, inspect_bytes
from tests import support

BOTH = [hotloops.scan, hotloops_py]  # the C loops (where built) and their Python reference


@pytest.mark.parametrize("scan", BOTH)
def test_first_type_with_no_headers_finds_nothing_wherever_the_table_would_be(
        scan: ModuleType) -> None:
    for shoff in (0, 5, 2**62, 2**63 - 1):
        for entsize in (0, 8, 64):
            assert scan.first_type(b"", shoff, 0, entsize, True, 2) == -1
    with pytest.raises(ValueError):
        scan.first_type(b"x" * 64, 0, 1, 0, True, 2)  # a table of 0-byte entries


@pytest.mark.parametrize("scan", BOTH)
@pytest.mark.parametrize("is64", [True, False])
@pytest.mark.parametrize("little", [True, False])
def test_a_symbol_name_offset_past_the_table_is_no_name(is64: bool, little: bool,
                                                        scan: ModuleType) -> None:
    """st_name 2^32-1 and 2^31 (negative as a 32-bit Py_ssize_t): outside, so left out."""
    e = "<" if little else ">"
    for off in (0xFFFFFFFF, 0x80000000, 3):
        row = (struct.pack(e + "IBBHQQ", off, 0x12, 0, 1, 0, 0) if is64
               else struct.pack(e + "IIIBBH", off, 0, 0, 0x12, 0, 1))
        assert scan.object_symbols(row, b"abc", is64, little) == ([], [], [], set())


def _answer(data: bytes) -> str:
    try:
        return repr(inspect_bytes(data, "x.o", ParseOptions(symbols=True)).to_json(symbols=True))
    except FormatError as exc:
        return "error: " + exc.reason


def test_no_section_table_reads_alike_both_ways(monkeypatch: pytest.MonkeyPatch) -> None:
    """e_shoff = 0 and e_shentsize = 0: the C path read it, the Python one refused it
    ("slice step cannot be zero"); both now read an object without sections."""
    folder = support.build("scan-edges", {"a.c": "int api(void) { return 1; }\n"},
                           [["gcc", "-O1", "-c", "a.c", "-o", "a.o"]])
    raw = bytearray((folder / "a.o").read_bytes())
    struct.pack_into("<Q", raw, 40, 0)  # e_shoff
    struct.pack_into("<H", raw, 58, 0)  # e_shentsize
    with_c = _answer(bytes(raw))
    monkeypatch.setattr(hotloops, "scan", hotloops_py)
    elf._probe.cache_clear()
    without = _answer(bytes(raw))
    elf._probe.cache_clear()
    assert with_c == without
    assert not with_c.startswith("error"), with_c
