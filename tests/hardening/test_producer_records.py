"""Hostile and truncated producer records, made from real objects: an ELF ``.comment`` of
thousands of records, without its NUL, not UTF-8, running past the file, or found by a name
that is the tail of a longer one; a wasm ``producers`` section of thousands of entries or cut
short; a COFF ``.debug$S`` whose records lie about their length; a PE image whose ``.rdata``
holds a hundred thousand GCC idents. Each is read within its bounds — a capped list, a
one-line error naming the file, never a hang or a guess."""

from __future__ import annotations

import struct
import subprocess
import time
from pathlib import Path

import pytest

from prebake.errors import FormatError
from prebake.inspect import ParseOptions, inspect
from prebake.inspect.elf import MAX_COMMENT
from prebake.inspect.producer import MAX_TEXTS
from tests import support
from tests.unit.test_wasm_reader import leb

C = "int tiny(int x) { return x * 3 + 1; }\n"


@pytest.fixture(scope="module")
def gcc_object() -> Path:
    return support.build("producer-hostile-elf", {"t.c": C},
                         [["gcc-12", "-O2", "-c", "t.c", "-o", "t.o"]]) / "t.o"


def _with_comment(src: Path, dest: Path, payload: bytes) -> Path:
    """``src`` with its ``.comment`` replaced by ``payload`` (binutils' objcopy)."""
    blob = dest.with_suffix(".bin")
    blob.write_bytes(payload)
    subprocess.run(["objcopy", f"--update-section=.comment={blob}", str(src), str(dest)],
                   check=True)
    return dest


def _comment_header(data: bytes) -> int:
    """The file offset of the ``.comment`` section header of an ELF64 LE object."""
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    stroff, = struct.unpack_from("<Q", data, shoff + shstrndx * shentsize + 0x18)
    for i in range(shnum):
        name, = struct.unpack_from("<I", data, shoff + i * shentsize)
        if data[stroff + name: stroff + name + 9] == b".comment\0":
            return shoff + i * shentsize
    raise AssertionError("no .comment")


def test_thousands_of_records_are_capped(gcc_object: Path, tmp_path: Path) -> None:
    payload = b"\0".join(f"GCC: (fake {i}) 12.{i}.0".encode() for i in range(5000)) + b"\0"
    obj = _with_comment(gcc_object, tmp_path / "many.o", payload)
    t0 = time.monotonic()
    facts = inspect(obj, ParseOptions())
    assert time.monotonic() - t0 < 5
    assert facts.abi.producer is not None and len(facts.abi.producer) <= MAX_TEXTS
    assert len(facts.evidence["producer"]) <= MAX_TEXTS + 1


def test_a_comment_past_its_read_bound_is_said(gcc_object: Path, tmp_path: Path) -> None:
    obj = _with_comment(gcc_object, tmp_path / "big.o",
                        b"\0" * (MAX_COMMENT + 100) + b"GCC: (late) 9.1.0\0")
    facts = inspect(obj, ParseOptions())
    assert facts.abi.producer is None  # the record after the bound is not read
    assert any(f"the first {MAX_COMMENT} read" in e for e in facts.evidence["producer"])


def test_a_record_without_nul_or_utf8_is_read_as_text(gcc_object: Path, tmp_path: Path) -> None:
    obj = _with_comment(gcc_object, tmp_path / "raw.o", b"GCC: (\xff\xfe) 12.2.0")
    facts = inspect(obj, ParseOptions())
    assert facts.abi.producer == ["gcc 12.2.0"]
    assert facts.evidence["producer"] == [".comment 'GCC: (\ufffd\ufffd) 12.2.0'"]
    junk = inspect(_with_comment(gcc_object, tmp_path / "junk.o", b"\0hello\0"), ParseOptions())
    assert junk.abi.producer is None  # a record no row reads is evidence, not a producer
    assert junk.evidence["producer"] == [
        ".comment 'hello': no producer this reader knows", "no record names a compiler"]


def test_a_comment_running_past_the_file_is_one_error(gcc_object: Path, tmp_path: Path) -> None:
    data = bytearray(gcc_object.read_bytes())
    struct.pack_into("<Q", data, _comment_header(bytes(data)) + 0x20, 1 << 40)  # sh_size
    bad = tmp_path / "past.o"
    bad.write_bytes(bytes(data))
    with pytest.raises(FormatError, match=r"past\.o: .*runs past the end"):
        inspect(bad, ParseOptions())


def _into_a_tail(src: Path, tmp: Path, section: str) -> tuple[Path, Path]:
    """``src`` with ``section`` renamed ``x<section>`` (binutils' objcopy), and that object
    with the renamed header pointing one byte into its name: ``section`` is then only the tail
    of a longer name, as linkers that share tails leave it."""
    renamed = tmp / "x.o"
    subprocess.run(["objcopy", "--rename-section", f"{section}=x{section}", str(src),
                    str(renamed)], check=True)
    data = bytearray(renamed.read_bytes())
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    stroff, = struct.unpack_from("<Q", data, shoff + shstrndx * shentsize + 0x18)
    want = f"x{section}\0".encode()
    for i in range(shnum):
        name, = struct.unpack_from("<I", data, shoff + i * shentsize)
        if data[stroff + name: stroff + name + len(want)] == want:
            struct.pack_into("<I", data, shoff + i * shentsize, name + 1)
    assert data.count(want[1:]) == 1  # only inside "x<section>"
    tail = tmp / "tail.o"
    tail.write_bytes(bytes(data))
    return renamed, tail


def test_a_name_that_is_the_tail_of_a_longer_one_is_found(gcc_object: Path,
                                                          tmp_path: Path) -> None:
    """sh_name may point into another name's tail (linkers share tails): with the section
    renamed ``x.comment``, ``.comment`` is only the tail of that name, and a header pointing
    one byte in names a ``.comment`` all the same."""
    renamed, tail = _into_a_tail(gcc_object, tmp_path, ".comment")
    assert inspect(renamed, ParseOptions()).abi.producer is None  # x.comment is not it
    assert inspect(tail, ParseOptions()).abi.producer == ["gcc 12.2.0"]


def test_a_stack_note_named_by_a_tail_is_found_too(gcc_object: Path, tmp_path: Path) -> None:
    """The same lookup finds ``.note.GNU-stack`` (whether the object asks for an executable
    stack): it used to be looked for only right after a NUL of the name table."""
    renamed, tail = _into_a_tail(gcc_object, tmp_path, ".note.GNU-stack")
    assert inspect(renamed, ParseOptions()).abi.exec_stack is None
    facts = inspect(tail, ParseOptions())
    assert facts.abi.exec_stack is False
    assert facts.evidence["exec_stack"] == [".note.GNU-stack is not executable"]


def _name(s: bytes) -> bytes:
    return leb(len(s)) + s


def _module(payload: bytes) -> bytes:
    body = _name(b"producers") + payload
    return b"\0asm\1\0\0\0" + b"\0" + leb(len(body)) + body


def test_a_wasm_producers_section_of_thousands_is_capped_and_a_cut_one_an_error(
        tmp_path: Path) -> None:
    entries = b"".join(_name(f"tool{i}".encode()) + _name(b"1.0") for i in range(3000))
    many = tmp_path / "many.wasm"
    many.write_bytes(_module(leb(1) + _name(b"processed-by") + leb(3000) + entries))
    facts = inspect(many, ParseOptions())
    assert facts.abi.producer is not None and len(facts.abi.producer) <= MAX_TEXTS
    cut = tmp_path / "cut.wasm"  # claims a million entries, holds one
    cut.write_bytes(_module(leb(1) + _name(b"processed-by") + leb(1 << 20)
                            + _name(b"clang") + _name(b"14.0.6")))
    with pytest.raises(FormatError, match=r"cut\.wasm"):
        inspect(cut, ParseOptions())


@pytest.fixture(scope="module")
def zig_coff() -> Path:
    return support.build("producer-hostile-coff", {"t.c": C}, [
        [*support.ZIG, "cc", "-target", "x86_64-windows-gnu", "-O2", "-c", "t.c", "-o", "t.obj"]],
        env={"ZIG_GLOBAL_CACHE_DIR": str(support.CACHE / "zig")}) / "t.obj"


def _compile_record(data: bytes) -> int:
    """The offset of the first S_COMPILE3 record header (its u16 length) in ``.debug$S``."""
    nsec, = struct.unpack_from("<H", data, 2)
    for i in range(nsec):
        name, _vs, _va, size, ptr = struct.unpack_from("<8sIIII", data, 20 + 40 * i)
        if name.rstrip(b"\0") == b".debug$S":
            at = ptr + 4
            while at < ptr + size:
                kind, length = struct.unpack_from("<II", data, at)
                if kind == 0xF1:
                    pos = at + 8
                    while pos < at + 8 + length:
                        reclen, rectyp = struct.unpack_from("<HH", data, pos)
                        if rectyp == 0x113C:
                            return pos
                        pos += 2 + reclen
                at += 8 + ((length + 3) & ~3)
    raise AssertionError("no S_COMPILE3")


@pytest.mark.parametrize("reclen", [0, 1, 0xFFFF])
def test_codeview_records_that_lie_about_their_length_read_nothing(
        zig_coff: Path, tmp_path: Path, reclen: int) -> None:
    data = bytearray(zig_coff.read_bytes())
    assert inspect(zig_coff, ParseOptions()).abi.producer is not None
    struct.pack_into("<H", data, _compile_record(bytes(data)), reclen)
    bad = tmp_path / "bad.obj"
    bad.write_bytes(bytes(data))
    facts = inspect(bad, ParseOptions())
    assert facts.abi.producer is None
    assert "no .rdata$zzz, .comment or CodeView compile record" in facts.evidence["producer"][0]


def test_a_pe_rdata_full_of_idents_is_read_bounded(tmp_path: Path) -> None:
    d = support.build("producer-hostile-pe", {"t.c": C}, [
        ["x86_64-w64-mingw32-gcc", "-O2", "-shared", "t.c", "-o", "t.dll"]])
    data = bytearray((d / "t.dll").read_bytes())
    first = data.find(b"GCC: (")
    ident = b"GCC: (x) 1.0\0\0\0\0"  # 16 bytes: every slot aligned, as GNU ld lays them out
    start = first - (first % 16)
    end = data.find(b"\0" * 64, first)  # the idents end where .rdata's padding starts
    data[start:end] = ident * ((end - start) // 16) + bytes((end - start) % 16)
    bad = tmp_path / "many.dll"
    bad.write_bytes(bytes(data))
    facts = inspect(bad, ParseOptions())
    assert facts.abi.producer == ["gcc 1.0"]
    assert facts.evidence["producer"][0].startswith(".rdata (x")
