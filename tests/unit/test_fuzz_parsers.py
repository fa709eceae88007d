"""Truncated and mutated inputs to every registered parser: only ``FormatError`` may come out.

Seeds are small real binaries of every format (built once with the real toolchains and cached);
hypothesis truncates them, flips bytes (mostly in headers, where sizes and counts live) and
plants extreme values in 32/64-bit words. Each parse must return facts or raise
``FormatError``, within a time bound (a hang trips an alarm) and a memory bound (tracemalloc
peak), whatever sizes the corrupted headers declare. ``test_every_reader_has_a_seed`` fails
when a new reader lands without a seed here.
"""

from __future__ import annotations

import functools
import mmap
import shutil
import signal
import tempfile
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from prebake.errors import FormatError
from prebake.inspect import Facts, ParseOptions, inspect, inspect_bytes, readers, sniff
from prebake.inspect.demangle import demangle
from tests import support

TIME_LIMIT_S = 20  # per parse; a hang, not slowness, is what this catches
MEMORY_SLACK = 64 << 20  # bytes of peak allocation allowed beyond 16 × the input size

SOURCES = {
    "c.c": "int api(int x) { return x + 1; }\nextern int ext(int);\n"
           "int call(int x) { return ext(x); }\nint data_sym = 3;\n",
    "x.cpp": "#include <string>\nstd::string greet(const std::string &s) { return s + \"!\"; }\n",
    "d.c": "__declspec(dllexport) int exported(int x) { return x + 1; }\n",
    "foo.def": "LIBRARY foo.dll\nEXPORTS\nfoo_fn\nfoo_data DATA\n",
}
SEED_COMMANDS = [
    ["gcc", "-O2", "-c", "c.c", "-o", "elf.o"],
    ["gcc", "-O2", "-shared", "-fPIC", "c.c", "-o", "libelf.so"],
    ["gcc", "-O2", "-flto", "-c", "c.c", "-o", "gcclto.o"],
    ["ar", "rcs", "libgnu.a", "elf.o"],
    ["llvm-ar", "--format=bsd", "rcs", "libbsd.a", "elf.o"],
    ["clang", "-O2", "-flto", "-c", "c.c", "-o", "bitcode.o"],
    ["clang", "-O2", "-flto", "--target=x86_64-apple-macos11", "-c", "c.c", "-o", "bcwrap.o"],
    ["clang", "-O2", "--target=wasm32", "-c", "c.c", "-o", "wasm.o"],
    ["clang", "-O2", "--target=wasm32", "-nostdlib", "-Wl,--no-entry", "-Wl,--export-all",
     "-Wl,--allow-undefined", "c.c", "-o", "module.wasm"],
    ["clang", "-O2", "--target=x86_64-apple-macos11", "-c", "c.c", "-o", "macho_x64.o"],
    ["clang", "-O2", "--target=arm64-apple-macos11", "-c", "c.c", "-o", "macho_a64.o"],
    ["llvm-lipo-14", "-create", "macho_x64.o", "macho_a64.o", "-output", "fat.o"],
    ["clang", "-O2", "--target=x86_64-pc-windows-msvc", "-c", "c.c", "-o", "coff.obj"],
    ["x86_64-w64-mingw32-gcc", "-O2", "-shared", "d.c", "-o", "pe.dll"],
    ["llvm-dlltool", "-m", "i386:x86-64", "-d", "foo.def", "-l", "imp.lib"],
]
SEED_FILES = ("elf.o", "libelf.so", "gcclto.o", "libgnu.a", "libbsd.a", "bitcode.o", "bcwrap.o",
              "wasm.o", "module.wasm", "macho_x64.o", "fat.o", "coff.obj", "pe.dll", "imp.lib")
TOOLS = ("gcc", "clang", "llvm-ar", "llvm-lipo-14", "x86_64-w64-mingw32-gcc", "llvm-dlltool")

pytestmark = pytest.mark.skipif(
    any(shutil.which(t) is None for t in TOOLS), reason="needs gcc, clang/llvm 14 and mingw-w64"
)


def _load_seeds() -> dict[str, bytes]:
    out = support.build("fuzz-seeds", SOURCES, SEED_COMMANDS)
    seeds = {name: (out / name).read_bytes() for name in SEED_FILES}
    # a COFF archive member on its own: the short import object (starts 00 00 FF FF)
    lib = seeds["imp.lib"]
    pos = lib.find(b"\0\0\xff\xff\0\0")
    if pos > 0:
        seeds["short_import"] = lib[pos : pos + 60]
    return seeds


@pytest.fixture(scope="module")
def seeds() -> dict[str, bytes]:
    return _load_seeds()


@contextmanager
def _alarm(seconds: int) -> Iterator[None]:
    def boom(signum: int, frame: object) -> None:
        raise TimeoutError(f"parse took more than {seconds} s")

    old = signal.signal(signal.SIGALRM, boom)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _check(data: bytes, opts: ParseOptions) -> None:
    tracemalloc.start()
    try:
        with _alarm(TIME_LIMIT_S):
            try:
                inspect_bytes(data, "fuzz.bin", opts)
            except FormatError as exc:
                assert "fuzz.bin" in str(exc)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak <= 16 * len(data) + MEMORY_SLACK, f"peak {peak >> 20} MiB for {len(data)} bytes"


def test_every_reader_has_a_seed(seeds: dict[str, bytes]) -> None:
    claimed = {id(sniff(data[:64])) for data in seeds.values()}
    missing = [r.name for r in readers() if id(r) not in claimed]
    assert not missing, f"add a fuzz seed for: {missing}"


def _holds_a_view(obj: object, depth: int = 0) -> bool:
    if isinstance(obj, memoryview | mmap.mmap):
        return True
    if depth > 12:
        return False
    if isinstance(obj, dict):
        return any(_holds_a_view(v, depth + 1) for v in obj.values())
    if isinstance(obj, list | tuple | set | frozenset):
        return any(_holds_a_view(v, depth + 1) for v in obj)
    if hasattr(obj, "__dict__"):
        return any(_holds_a_view(v, depth + 1) for v in vars(obj).values())
    return False


def test_seeds_parse_cleanly_and_hold_no_views(seeds: dict[str, bytes]) -> None:
    """Facts must not keep memoryviews: ``inspect`` closes its map after parsing."""
    for name, data in seeds.items():
        facts = inspect_bytes(memoryview(data), name, ParseOptions(symbols=True))
        assert facts.error is None, name
        assert not _holds_a_view(facts), f"{name}: facts hold a memoryview into the input"


def test_every_truncation_of_headers(seeds: dict[str, bytes]) -> None:
    for data in seeds.values():
        step = max(1, len(data) // 40)
        for cut in [*range(0, min(len(data), 600), 7), *range(600, len(data), step)]:
            _check(data[:cut], ParseOptions(symbols=cut % 2 == 0))


EXTREMES = (0, 1, 0x7F, 0x80, 0xFF, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 2**63, 2**64 - 1)


@st.composite
def mutated(draw: st.DrawFn, seeds: dict[str, bytes]) -> tuple[bytes, ParseOptions]:
    name = draw(st.sampled_from(sorted(seeds)))
    data = bytearray(seeds[name])
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(("flip", "word", "truncate", "dup")))
        if not data:
            break
        head = min(len(data), 512)
        pos = draw(st.one_of(st.integers(0, head - 1), st.integers(0, len(data) - 1)))
        if op == "flip":
            data[pos] = draw(st.integers(0, 255))
        elif op == "word":
            width = draw(st.sampled_from((2, 4, 8)))
            value = draw(st.sampled_from(EXTREMES)) % (1 << (8 * width))
            little = draw(st.booleans())
            data[pos : pos + width] = value.to_bytes(width, "little" if little else "big")
        elif op == "truncate":
            del data[pos:]
        else:
            chunk = data[pos : pos + draw(st.integers(1, 64))]
            data[pos:pos] = chunk
    return bytes(data), ParseOptions(symbols=draw(st.booleans()), deep=draw(st.booleans()))


@settings(max_examples=400, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_mutated_inputs_raise_only_format_error(data: st.DataObject) -> None:
    blob, opts = data.draw(mutated(_cached_seeds()))
    _check(blob, opts)


@functools.cache
def _cached_seeds() -> dict[str, bytes]:
    """Seeds for ``@given`` tests, which cannot take module-scoped fixtures."""
    return _load_seeds()


def test_files_cut_short_are_errors_naming_them(seeds: dict[str, bytes], tmp_path: Path) -> None:
    """``inspect`` reads the file, whole or part by part: an error mid-parse is a
    FormatError naming the file."""
    for i, (name, data) in enumerate(sorted(seeds.items())):
        for cut in (len(data) // 3, len(data) - 1):
            p = tmp_path / f"{i}-{cut}-{name}"
            p.write_bytes(data[:cut] if cut > 0 else b"\0")
            try:
                inspect(p, ParseOptions(symbols=True))
            except FormatError as exc:
                assert str(p) in str(exc)


WINDOWED_SEEDS = ("elf.o", "libelf.so", "gcclto.o", "libgnu.a", "libbsd.a")


def _outcome(parse: Callable[[], Facts]) -> object:
    try:
        return parse().to_json(symbols=True)
    except FormatError as exc:
        return exc.reason


@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_mutants_read_part_by_part_give_what_the_whole_bytes_give(data: st.DataObject) -> None:
    """Archives and ELF files on disk are read through a ``FileWindow``, only the parts their
    reader asks for: the facts, or the error, must be those of the same bytes in memory."""
    seeds = {k: v for k, v in _cached_seeds().items() if k in WINDOWED_SEEDS}
    blob, opts = data.draw(mutated(seeds))
    assume(blob and not blob.startswith(b"!<thin>\n"))  # a thin archive needs its folder
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzz.bin"
        path.write_bytes(blob)
        from_file = _outcome(lambda: inspect(path, opts))
        in_memory = _outcome(lambda: inspect_bytes(memoryview(blob), str(path), opts))
    assert from_file == in_memory


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.one_of(st.text(max_size=200), st.text(max_size=200).map(lambda t: "_Z" + t),
                 st.binary(max_size=200).map(lambda b: "_ZN" + b.decode("latin-1"))))
def test_demangler_never_raises(name: str) -> None:
    out = demangle(name)
    assert out is None or isinstance(out, str)


def test_demangler_known_names_and_batch() -> None:
    assert demangle("_ZNKSbIwSt11char_traitsIwESaIwEE8capacityEv") == (
        "std::basic_string<wchar_t, std::char_traits<wchar_t>, std::allocator<wchar_t> >"
        "::capacity() const"
    )
    assert demangle("__Z7throweri") == "thrower(int)"  # Mach-O's extra underscore
    assert demangle("main") is None and demangle("?f@@YAXXZ") is None
    assert demangle("_Z" + "N" * 100_000) is None
