"""The ELF summary's shortcuts answer exactly what the plain byte tests they replace answer.

The facts summary skips the symbol table when ``_may_name`` says no candidate name (EH marker,
``__gnu_lto_slim``, glibc table entry) occurs in the string table followed by a NUL; a wrong
"no" would silently drop a glibc floor or an EH fact, so the probe is checked against the
brute-force ``name + NUL in table`` on generated tables (shared tails included) and on the
string tables of real objects, with the C loops and with their Python reference in
``hotloops.scan``. ``_namespaces`` likewise.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prebake.inspect import elf, glibc, hotloops, hotloops_py
from prebake.inspect.archive import read_archive

ARCHES = (None, "x86_64", "aarch64", "arm", "i686")


@pytest.fixture(autouse=True, scope="module", params=["C", "Python"])
def impl(request: pytest.FixtureRequest) -> Iterator[None]:
    """Each test with the C loops and with the Python reference."""
    saved = hotloops.scan
    hotloops.scan = saved if request.param == "C" else hotloops_py
    yield
    hotloops.scan = saved


def _candidates(arch: str | None) -> list[bytes]:
    names = {m.encode() for m in elf.EH_MARKERS} | {elf.GCC_LTO_SLIM.encode(), b"personality_v0"}
    if arch is not None:
        names |= glibc.table(arch).keys()
    return sorted(names)


def _brute(strtab: bytes, arch: str | None) -> bool:
    if not strtab.endswith(b"\0"):
        return True
    return any(n + b"\0" in strtab for n in _candidates(arch))


CANDS = _candidates("x86_64")
# pieces a table is made of: candidate names, their tails and heads (a near miss), junk
piece = st.one_of(
    st.sampled_from(CANDS),
    st.sampled_from(CANDS).flatmap(lambda n: st.integers(1, len(n) - 1).map(lambda i: n[i:])),
    st.sampled_from(CANDS).flatmap(lambda n: st.integers(1, len(n) - 1).map(lambda i: n[:i])),
    st.binary(max_size=12).map(lambda b: b.replace(b"\0", b"")),
    st.sampled_from([b"_ZN4llvm3fooEv", b"_ZNSt7__cxx1112basic_stringE", b"x", b"stat", b"E"]),
)
table = st.lists(st.tuples(piece, piece).map(lambda p: p[0] + p[1]), max_size=12).map(
    lambda parts: b"\0" + b"\0".join(parts) + b"\0"
)


@settings(max_examples=400, deadline=None)
@given(table, st.sampled_from(ARCHES))
def test_probe_is_exact_on_generated_tables(strtab: bytes, arch: str | None) -> None:
    assert elf._may_name(strtab, arch) == _brute(strtab, arch)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=40))
def test_probe_says_yes_when_the_last_name_has_no_nul(raw: bytes) -> None:
    strtab = b"\0" + raw.replace(b"\0", b"") + b"x"
    assert elf._may_name(strtab, "x86_64")


def test_probe_finds_a_name_inside_a_longer_string() -> None:
    """Shared tails: clang stores ``stat`` inside ``xstat``, and the probe must see it."""
    assert elf._may_name(b"\0.text\0xstat\0", "x86_64")
    assert not elf._may_name(b"\0.text\0xstat\0", None)  # stat is a glibc name only
    assert elf._may_name(b"\0foo__gxx_personality_v0\0", None)
    assert not elf._may_name(b"\0_Unwind_Resume_\0", None)
    assert not elf._may_name(b"\0stat_\0", "x86_64")


def test_probe_compares_whole_names_behind_a_shared_tail() -> None:
    """Names that share their last bytes are told apart by the bytes before them; a byte
    the classes let through but no candidate has there finds nothing."""
    probe = elf._Probe({b"fstat", b"xstat", b"stat64", b"dup3"})
    assert probe.hit(b"\0lstat\0") is False and probe.hit(b"\0__xstat\0") is True
    assert probe.hit(b"\0xup3\0") is False  # x passes the first class (xstat), dup3's tail
    assert probe.hit(b"tat\0") is False  # shorter than the tail: nothing to look behind
    assert probe.hit(memoryview(b"\0_stat64\0")) is True  # a view into a mapped file
    assert elf._Probe({b"ab", b"cdef"}).hit(b"\0xab\0") is True  # shorter than TAIL


ns_text = st.lists(
    st.sampled_from(
        [b"St3__1", b"St7__cxx11", b"St3__", b"St7__cxx1", b"S", b"t", b"_", b"1", b"Z"]
    ),
    max_size=10,
).map(b"".join)


@settings(max_examples=400, deadline=None)
@given(ns_text)
def test_namespaces_match_two_substring_tests(names: bytes) -> None:
    libcxx, libstdcxx = elf._namespaces(names)
    assert libcxx == (b"St3__1" in names)
    if not libcxx:  # the libstdc++ answer is consulted only without libc++
        assert libstdcxx == (b"St7__cxx11" in names)


marks_text = st.lists(
    st.sampled_from(
        [b".gnu.lto_", b".gcc_except_table", b".note.GNU-stack\0", b".note.GNU-stack", b".gnu.",
         b".gcc_", b".note.", b".text", b"\0", b"x"]
    ),
    max_size=10,
).map(b"".join)


@settings(max_examples=200, deadline=None)
@given(marks_text)
def test_section_marks_match_substring_tests(shstrtab: bytes) -> None:
    found = hotloops.scan.occurs(shstrtab, elf._MARK_TEXTS)
    for i, mark in enumerate(elf._MARK_TEXTS):
        assert bool(found >> i & 1) == (mark in shstrtab)


def _strtabs(pattern: str, limit: int) -> list[bytes]:
    out = []
    where = Path(pattern)
    for path in sorted(where.parent.glob(where.name))[:limit]:
        data = path.read_bytes()
        for m in read_archive(data).members:
            obj = elf.ElfFile(data[m.data_off : m.data_off + m.size], str(path))
            sec = obj.first(elf.SHT.SYMTAB)
            if sec is not None:
                out.append(obj.linked_strtab(sec))
    return out


@pytest.mark.parametrize(
    "pattern",
    ["/usr/lib/llvm-14/lib/libLLVMSupport.a", "/usr/lib/gcc/x86_64-linux-gnu/12/libstdc++.a"],
)
def test_probe_is_exact_on_real_string_tables(pattern: str) -> None:
    tables = _strtabs(pattern, 1)
    if not tables:
        pytest.skip(f"{pattern} is not installed")
    answers = [elf._may_name(t, "x86_64") for t in tables]
    assert answers == [_brute(t, "x86_64") for t in tables]
    assert not all(answers)  # the shortcut is taken, or this test proves nothing about it


_SHORT = {b"tat", b"qwstat", b"ab", b"zzab", b"abcdef"}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([b"xstat", b"qwstat", b"tat", b"ab", b"cab", b"abc", b"zzab",
                                 b"bcdef", b"abcdef", b"q", b"sta"]), max_size=8))
def test_names_shorter_and_longer_than_the_tails_are_exact(parts: list[bytes]) -> None:
    """Names shorter than the probe's four-byte tails (``tat``, ``ab``), as long (``zzab``)
    and longer (``qwstat``), inside longer strings (``xstat``) or not: the brute force's
    answer."""
    strtab = b"\0" + b"\0".join(parts) + b"\0"
    probe = elf._Probe(_SHORT)
    assert probe.hit(strtab) == any(n + b"\0" in strtab for n in _SHORT)
    assert probe.hit(b"\0xstat\0")
    assert not elf._Probe({b"qwstat"}).hit(b"\0xstat\0")
