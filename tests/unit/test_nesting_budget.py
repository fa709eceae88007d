"""Generated nested containers stay within the work budget, whatever their shape.

hypothesis builds fat Mach-O files, ar archives and thin archives inside one another (fat ⊃ ar
⊃ fat …, slices repeated at one offset, thin archives naming files many times, members that
are bombs of their own) around small real leaves (a Mach-O object, an ELF object, bytes that
are no binary). Every nested parse is counted through the dispatcher's ``Work.spend`` and
every byte read by wrapping ``binreader.read_at``; whatever the input, a file's nested parses
stay within ``Work.of(size)`` (``MAX_NESTING`` times its bytes, one parse per 16 bytes plus
64), a thin archive's member files are each read once, and the result is facts or one
``FormatError``.
"""

from __future__ import annotations

import struct
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import prebake.inspect as pi
from prebake.errors import FormatError
from prebake.inspect import archive as ar
from prebake.inspect import binreader as br
from prebake.inspect import dispatch

MACHO = struct.pack("<IIIIIIII", 0xFEEDFACF, 0x01000007, 3, 1, 0, 0, 0, 0)
ELF = bytearray(64)
ELF[:7] = b"\x7fELF\x02\x01\x01"
struct.pack_into("<HHI", ELF, 16, 1, 62, 1)
LEAVES = (MACHO, bytes(ELF), b"not a binary\n")


def _header(name: str, size: int) -> bytes:
    return f"{name:<16}{0:<12}{0:<6}{0:<6}{644:<8}{size:<10}".encode() + b"`\n"


THIN_BUDGET = 96 << 20  # MAX_THIN_BYTES for the thin test, so files of 32 MiB can reach it


def archive(members: list[bytes]) -> bytes:
    out = b"!<arch>\n"
    for i, m in enumerate(members):
        out += _header(f"m{i}.o/", len(m)) + m + b"\n" * (len(m) & 1)
    return out


def fat(slices: list[bytes], repeat: int) -> bytes:
    """Each of ``slices`` once, then the first one ``repeat`` more times at its own offset
    (what a hostile file does to multiply work); at most 44 slices (45 is a Java class)."""
    n = min(44, len(slices) + repeat)
    at = 8 + 20 * n
    table, body, offsets = [], b"", []
    for s in slices[:n]:
        offsets.append((at + len(body), len(s)))
        body += s
    while len(offsets) < n:
        offsets.append(offsets[0])
    head = struct.pack(">II", 0xCAFEBABE, n)
    for off, size in offsets:
        table.append(struct.pack(">IIIII", 0x01000007, 3, off, size, 0))
    return head + b"".join(table) + body


containers = st.recursive(
    st.sampled_from(LEAVES),
    lambda inner: st.one_of(
        st.lists(inner, min_size=1, max_size=4).map(archive),
        st.tuples(st.lists(inner, min_size=1, max_size=3), st.integers(0, 43))
        .map(lambda t: fat(*t)),
    ),
    max_leaves=24,
)


@dataclass
class Spent:
    parses: int = 0
    nested_bytes: int = 0
    read: int = 0


@contextmanager
def counting() -> Iterator[Spent]:
    """Every nested parse (a ``Work.spend`` of the dispatcher, which every nested
    ``inspect_bytes`` pays before it reads) and every byte read from a file, for the
    duration."""
    spent = Spent()
    real_spend = dispatch.Work.spend
    real_read = br.read_at

    def spend(self: dispatch.Work, size: int, path: str) -> None:
        spent.parses += 1
        spent.nested_bytes += size
        real_spend(self, size, path)

    def read(fd: int, n: int, offset: int, chunk: int = br.MAX_READ) -> bytes | bytearray:
        spent.read += n
        return real_read(fd, n, offset, chunk)

    with mock.patch.object(dispatch.Work, "spend", spend), \
            mock.patch.object(br, "read_at", read):
        yield spent


def _facts_or_error(data: bytes | Path) -> pi.Facts | FormatError:
    try:
        if isinstance(data, Path):
            return pi.inspect(data)
        return pi.inspect_bytes(data, "generated")
    except FormatError as exc:
        return exc


def _bomb(levels: int) -> bytes:
    data = MACHO
    for _ in range(levels):
        data = fat([archive([data])], 43)
    return data


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(containers)
@example(_bomb(4))  # 44⁴ parses of a 5 KB file without the budget
def test_nested_containers_stay_within_their_budget(data: bytes) -> None:
    budget = pi.Work.of(len(data))
    with counting() as spent:
        got = _facts_or_error(data)
    # a parse that raised the budget error was counted before it was refused: one over
    assert spent.parses <= budget.parses_left + 1
    assert spent.nested_bytes <= budget.bytes_left + len(data)
    if isinstance(got, FormatError):
        assert got.path.startswith("generated") and "\n" not in got.reason


names = st.lists(st.integers(0, 3), min_size=1, max_size=60)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(names, st.lists(containers, min_size=4, max_size=4),
       st.lists(st.sampled_from([0, 1 << 20, 32 << 20]), min_size=4, max_size=4))
def test_thin_archives_naming_files_many_times_read_each_once(
        picks: list[int], bodies: list[bytes], padding: list[int]) -> None:
    """A thin archive naming four files (nested containers themselves, some padded to a
    sparse 32 MiB) in any order, any number of times: each file is read at most once, and
    the entries' sizes, repeats counted, stay under ``MAX_THIN_BYTES`` (made 96 MiB here) or
    the archive is one error."""
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        sizes = []
        for i, (body, pad) in enumerate(zip(bodies, padding, strict=True)):
            with (d / f"f{i}.o").open("wb") as fh:
                fh.write(body)
                fh.truncate(len(body) + pad)
            sizes.append(len(body) + pad)
        table = b"".join(f"f{i}.o/\n".encode() for i in range(4))
        lib = b"!<thin>\n" + _header("//", len(table)) + table
        lib += b"".join(_header(f"/{6 * i}", 64) for i in picks)
        (d / "lib.a").write_bytes(lib)
        with counting() as spent, mock.patch.object(ar, "MAX_THIN_BYTES", THIN_BUDGET):
            got = _facts_or_error(d / "lib.a")
        distinct = {picks[j] for j in range(len(picks))
                    if sum(sizes[i] for i in picks[: j + 1]) <= THIN_BUDGET}
        # the archive's own bytes, then each distinct member file's (its whole bytes at most
        # twice: the sniff and a whole read; a windowed reader reads less)
        assert spent.read <= 2 * len(lib) + sum(2 * sizes[i] + 4096 for i in distinct)
        if sum(sizes[i] for i in picks) > THIN_BUDGET:
            assert isinstance(got, FormatError) and "add up to more than" in got.reason
        elif isinstance(got, pi.Facts):
            assert got.members is not None and len(got.members) == len(picks)
