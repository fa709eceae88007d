"""Bounded work for every input: no tiny file makes unbounded work, no special file hangs a
command, and one file's failed read never takes the other paths' results with it.

Each case is run as a user would (``python -m prebake``) with a timeout far above what the
bounded work needs: a regression shows as a timeout or as output far past the bounds.
"""

from __future__ import annotations

import json
import os
import resource
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from prebake.errors import FormatError
from prebake.inspect import MAX_NESTING, inspect
from prebake.inspect import binreader as br
from prebake.inspect.archive import MAX_THIN_BYTES
from tests import support

CONTRACT = 'arch = "x86_64"\n'


def _run(*args: str | Path, timeout: float = 120, limit_as: int | None = None
         ) -> subprocess.CompletedProcess[str]:
    def limit() -> None:
        if limit_as is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit_as, limit_as))

    return subprocess.run([sys.executable, "-m", "prebake", *map(str, args)],
                          env=support.tool_env(), capture_output=True, text=True,
                          timeout=timeout, preexec_fn=limit if limit_as else None)


# --- nested containers: fat ⊃ archive ⊃ fat …, every slice at one offset --------------------

def ar_header(name: str, size: int) -> bytes:
    return (f"{name:<16}{0:<12}{0:<6}{0:<6}{644:<8}{size:<10}").encode() + b"`\n"


def ar(inner: bytes, name: str = "x.o/") -> bytes:
    return b"!<arch>\n" + ar_header(name, len(inner)) + inner + b"\n" * (len(inner) & 1)


def fat(inner: bytes, slices: int) -> bytes:
    """A fat Mach-O whose ``slices`` slices all point at the same bytes ``inner``."""
    at = 8 + 20 * slices
    head = struct.pack(">II", 0xCAFEBABE, slices)
    head += b"".join(struct.pack(">IIIII", 0x01000007, 3, at, len(inner), 0)
                     for _ in range(slices))
    return head + inner


MACHO_OBJECT = struct.pack("<IIIIIIII", 0xFEEDFACF, 0x01000007, 3, 1, 0, 0, 0, 0)


def nested_bomb(levels: int, slices: int = 44) -> bytes:
    """fat ⊃ ar ⊃ fat ⊃ ar … around a Mach-O object: ``slices ** levels`` parses unbounded
    (44 slices: the most a fat header may declare before it reads as a Java class file)."""
    data = MACHO_OBJECT
    for _ in range(levels):
        data = fat(ar(data), slices)
    return data


def test_a_nested_container_bomb_is_one_bounded_error(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.o"
    bomb.write_bytes(nested_bomb(5))
    assert bomb.stat().st_size < 8000  # 44**5 parses (165 million) without a budget
    good = tmp_path / "good.o"
    good.write_bytes(MACHO_OBJECT)
    proc = _run("inspect", "--json", bomb, good, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stdout) < 200_000  # 945 MB before the budget
    first, second = json.loads(proc.stdout)["results"]
    assert first["path"] == str(bomb) and "re-read the same bytes" in first["error"]
    assert second["path"] == str(good) and second.get("error") is None
    contract = tmp_path / "contract.toml"
    contract.write_text(CONTRACT)
    checked = _run("check", bomb, "--contract", contract, timeout=60)
    assert checked.returncode == 2 and len(checked.stderr.strip().splitlines()) == 1


def test_real_fat_and_archive_nesting_stays_inside_the_budget(tmp_path: Path) -> None:
    """Slices and members that do not overlap hold the file's bytes once per level: a fat
    file of archives of objects is read whole, its members all there."""
    member = ar(MACHO_OBJECT)
    data = fat(member, 1)
    pad = b"\n" * (len(data) & 1)
    archive = b"!<arch>\n" + b"".join(ar_header(f"m{i}.o/", len(data)) + data + pad
                                      for i in range(40))
    path = tmp_path / "nested.a"
    path.write_bytes(archive)
    facts = inspect(path)
    assert facts.error is None and facts.members is not None and len(facts.members) == 40
    assert all(m.error is None and m.slices for m in facts.members)
    assert MAX_NESTING == 8


# --- thin archives naming one file many times ----------------------------------------------

def thin(path: Path, *names: str) -> Path:
    table = b"".join(n.encode() + b"/\n" for n in names)
    out = b"!<thin>\n" + ar_header("//", len(table)) + table + b"\n" * (len(table) % 2)
    pos = 0
    for n in names:
        out += ar_header(f"/{pos}", 64)
        pos += len(n) + 2
    path.write_bytes(out)
    return path


def sparse_elf(path: Path, size: int) -> Path:
    """A valid ELF object header (no sections) in a sparse file of ``size`` bytes."""
    head = bytearray(64)
    head[:4] = b"\x7fELF"
    head[4:7] = bytes([2, 1, 1])
    struct.pack_into("<HHI", head, 16, 1, 62, 1)
    with path.open("wb") as fh:
        fh.write(bytes(head))
        fh.truncate(size)
    return path


def test_a_thin_archive_naming_one_file_many_times_reads_it_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sparse_elf(tmp_path / "big.o", 1 << 28)
    lib = thin(tmp_path / "libten.a", *["big.o"] * 10)
    assert lib.stat().st_size < 1000
    reads: list[int] = []
    real = br.read_at

    def counted(fd: int, n: int, offset: int, chunk: int = br.MAX_READ) -> bytes | bytearray:
        reads.append(n)
        return real(fd, n, offset, chunk)

    monkeypatch.setattr(br, "read_at", counted)
    facts = inspect(lib)
    assert facts.members is not None and len(facts.members) == 10
    assert all(m.error is None and m.format == "elf" for m in facts.members)
    assert [m.path for m in facts.members] == [f"{lib}(big.o)"] * 10
    assert sum(reads) < 64 * 1024  # headers of one read, never ten of a 1 GiB file


@pytest.mark.parametrize("distinct", [True, False])
def test_thin_members_past_the_byte_budget_are_one_error(tmp_path: Path, distinct: bool
                                                         ) -> None:
    """The issue's case, a 778-byte archive naming one 1 GiB file ten times, and the same
    over distinct files: the entries add up past ``MAX_THIN_BYTES``, one line, exit 2."""
    n = MAX_THIN_BYTES // (1 << 30) + 1 if distinct else 10
    for i in range(n if distinct else 1):
        sparse_elf(tmp_path / f"g{i}.o", 1 << 30)
    lib = thin(tmp_path / "libmany.a", *[f"g{i if distinct else 0}.o" for i in range(n)])
    proc = _run("inspect", lib, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"prebake: error: {lib}: thin archive members add up to more than {MAX_THIN_BYTES} "
        "bytes (repeats counted); not read further"]


@pytest.mark.parametrize("headers", ["understate", "true"])
def test_thin_members_past_the_budget_are_refused_before_any_is_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, headers: str) -> None:
    """The issue's reproducer: one 1 GiB file of data (no reader's format: read whole before)
    named ten times. The total comes from the member headers and the files' sizes before a
    member is read: no byte of the file is read (it took 1 GB of memory and 6-7 s)."""
    big = tmp_path / "big.bin"
    with big.open("wb") as fh:
        fh.truncate(1 << 30)
    lib = thin(tmp_path / "libten.a", *["big.bin"] * 10)
    if headers == "true":  # each member header records the file's size, as GNU ar writes it
        raw = lib.read_bytes()
        lib.write_bytes(raw.replace(b"64        `\n", f"{1 << 30:<10}`\n".encode()))
        assert raw.count(b"64        `\n") == 10
    opened: list[str] = []
    real_open = os.open

    def spy(file: Any, *args: Any, **kw: Any) -> int:
        opened.append(str(file))
        return real_open(file, *args, **kw)

    monkeypatch.setattr(os, "open", spy)
    with pytest.raises(FormatError, match=r"add up to more than \d+ bytes \(repeats counted\)"):
        inspect(lib)
    assert str(big) not in opened and str(big.resolve()) not in opened


# --- special files, loops, short reads -----------------------------------------------------

@pytest.fixture
def good_object() -> Path:
    folder = support.build("bounded-good", {"a.c": "int a(void) { return 1; }\n"},
                           [["gcc", "-c", "a.c", "-o", "a.o"]])
    return folder / "a.o"


def test_fifos_never_hang_inspect_or_check(tmp_path: Path, good_object: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a.o").write_bytes(good_object.read_bytes())
    os.mkfifo(tmp_path / "pipe")
    (tree / "lib.so").symlink_to(tmp_path / "pipe")  # leaves the tree: an escape
    os.mkfifo(tree / "inner-pipe")
    (tree / "libfifo.so").symlink_to("inner-pipe")
    os.mkfifo(tmp_path / "asset.tar.xz")
    contract = tmp_path / "contract.toml"
    contract.write_text(CONTRACT)
    shown = _run("inspect", "--json", tree, tmp_path / "asset.tar.xz", timeout=60)
    results = {r["path"]: r.get("error") for r in json.loads(shown.stdout)["results"]}
    assert results[str(tree / "a.o")] is None
    assert "is a FIFO" in results[str(tree / "inner-pipe")]
    assert "is a FIFO" in results[str(tree / "libfifo.so")]
    assert "is a FIFO" in results[str(tmp_path / "asset.tar.xz")]
    checked = _run("check", "--json", tree, "--contract", contract, timeout=60)
    assert checked.returncode == 1
    bad = {v["path"] for v in json.loads(checked.stdout)["violations"]}
    assert {str(tree / "inner-pipe"), str(tree / "libfifo.so")} <= bad
    named = _run("check", tmp_path / "asset.tar.xz", "--contract", contract, timeout=60)
    assert named.returncode == 2 and "is a FIFO" in named.stderr


def test_a_symlink_loop_is_one_line_naming_the_link(tmp_path: Path, good_object: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a.o").write_bytes(good_object.read_bytes())
    (tree / "loop1").symlink_to("loop2")
    (tree / "loop2").symlink_to("loop1")
    (tree / "self").symlink_to("self")
    shown = _run("inspect", "--json", tree, timeout=60)
    assert shown.returncode == 0, shown.stderr
    results = {r["path"]: r.get("error") for r in json.loads(shown.stdout)["results"]}
    assert results[str(tree / "a.o")] is None
    for link in ("loop1", "loop2", "self"):
        assert results[str(tree / link)].startswith("symlink loop"), results
    human = _run("inspect", tree, timeout=60)
    assert "internal error" not in human.stderr
    assert len(human.stderr.strip().splitlines()) == 3
    named = _run("inspect", tree / "self", timeout=60)
    assert named.returncode == 2 and named.stderr.count("\n") == 1
    assert "symlink loop" in named.stderr
    contract = tmp_path / "contract.toml"
    contract.write_text(CONTRACT)
    checked = _run("check", tree, "--contract", contract, timeout=60)
    assert checked.returncode == 1 and "symlink loop" in checked.stdout + checked.stderr


def test_a_file_shorter_than_its_size_is_its_own_error(tmp_path: Path, good_object: Path
                                                       ) -> None:
    """A /sys file says 4096 bytes and holds a few: its error, the others' results in
    order, one valid JSON document."""
    sysfile = next((p for p in (Path("/sys/kernel/mm/transparent_hugepage/enabled"),
                                Path("/sys/kernel/profiling"), Path("/sys/power/state"))
                    if p.is_file() and p.stat().st_size > len(p.read_bytes())), None)
    if sysfile is None:
        pytest.skip("no /sys file shorter than its size here")
    proc = _run("inspect", "--json", good_object, sysfile, good_object.parent / "a.c",
                good_object, timeout=60)
    results = json.loads(proc.stdout)["results"]
    assert [r["path"] for r in results] == [str(good_object), str(sysfile),
                                            str(good_object.parent / "a.c"), str(good_object)]
    assert results[0].get("error") is None and results[3].get("error") is None
    assert "internal error" not in proc.stderr
    assert results[1]["error"]


def test_a_window_past_the_end_of_the_file_is_a_format_error(tmp_path: Path) -> None:
    """What a truncation between stat and read looks like to a reader: a one-line error
    naming the file, never ``Truncated`` escaping (every reader, the head read too)."""
    from prebake.errors import FormatError
    from prebake.inspect import inspect_bytes

    f = tmp_path / "short.o"
    f.write_bytes(b"\x7fELF\x02\x01\x01" + bytes(20))
    with f.open("rb") as fh:
        for claimed in (64, 4096):
            with pytest.raises(FormatError, match=r"short\.o: ") as err:
                inspect_bytes(br.FileWindow(fh.fileno(), 0, claimed), str(f))
            assert "ended at 27 bytes" in err.value.reason


# --- reads over 2 GiB ------------------------------------------------------------------------

def test_read_at_loops_until_every_byte_is_read(tmp_path: Path) -> None:
    f = tmp_path / "data"
    f.write_bytes(bytes(range(256)) * 64)
    fd = os.open(f, os.O_RDONLY)
    try:
        assert bytes(br.read_at(fd, 10_000, 100, chunk=333)) == f.read_bytes()[100:10_100]
        with pytest.raises(br.Truncated, match="ended at 16384"):
            br.read_at(fd, 20_000, 0, chunk=4096)
    finally:
        os.close(fd)


def _leb(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def big_wasm(path: Path, size: int) -> Path:
    """A valid wasm module of ``size`` bytes: one custom section of zeros, sparse on disk."""
    name = b"\x01x"
    body = size - 8 - 1 - 5
    with path.open("wb") as fh:
        fh.write(b"\0asm\1\0\0\0" + b"\x00" + _leb(body).ljust(5, b"\0")[:5] + name)
        fh.truncate(size)
    return path


def _available_memory() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 0


def test_a_wasm_module_over_2_gib_is_read_whole(tmp_path: Path) -> None:
    """One ``pread`` returns at most 0x7ffff000 bytes on Linux: a valid 2.2 GB module is a
    module, not "truncated or corrupt"; under a memory limit it is one line, exit 2."""
    size = 2_200_000_000
    if _available_memory() < 2 * size:
        pytest.skip("needs 4.4 GB of free memory to read a 2.2 GB module")
    wasm = big_wasm(tmp_path / "big.wasm", size)
    proc = _run("inspect", "--json", wasm, timeout=300)
    assert proc.returncode == 0, proc.stderr
    [r] = json.loads(proc.stdout)["results"]
    assert r.get("error") is None and r["format"] == "wasm" and r["size"] == size
    limited = _run("inspect", wasm, timeout=300, limit_as=1 << 30)
    assert limited.returncode == 2
    assert limited.stderr.strip().splitlines() == [
        f"prebake: error: {wasm}: cannot be read within the memory this process may use "
        f"(wasm, {size} bytes)"]


def test_a_memory_error_in_a_reader_says_so_not_an_empty_corrupt(tmp_path: Path,
                                                                 good_object: Path) -> None:
    """An object whose symbol table claims 6 GiB of a sparse 8 GiB file, read with
    ``--symbols`` under a 1 GiB limit: was ``corrupt elf: `` and nothing after it."""
    data = bytearray(good_object.read_bytes())
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    for i in range(shnum):
        at = shoff + i * shentsize
        if struct.unpack_from("<I", data, at + 4)[0] == 2:  # SHT_SYMTAB
            struct.pack_into("<QQ", data, at + 0x18, 1 << 20, 6 << 30)
    huge = tmp_path / "huge.o"
    with huge.open("wb") as fh:
        fh.write(bytes(data))
        fh.truncate(8 << 30)
    proc = _run("inspect", "--symbols", huge, timeout=120, limit_as=1 << 30)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"prebake: error: {huge}: cannot be read within the memory this process may use "
        f"(elf, {8 << 30} bytes)"]
