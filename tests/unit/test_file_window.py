"""Archives and ELF files are read part by part (``binreader.FileWindow``): the facts must be
those of the whole file read into memory, and a file that shrinks under a window is an
error, never zeros."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from prebake.errors import FormatError
from prebake.inspect import ParseOptions, inspect, inspect_bytes
from prebake.inspect.binreader import FileWindow, Truncated, part

# real archives of ELF objects (GCC's and Clang's), a shared library, a bare object
FILES = [Path(p) for p in (
    "/usr/lib/llvm-14/lib/libLLVMDemangle.a",
    "/usr/lib/llvm-14/lib/libLLVMSupport.a",
    "/usr/lib/gcc/x86_64-linux-gnu/12/libstdc++.a",
    "/usr/lib/gcc/x86_64-linux-gnu/12/crtbegin.o",
    "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
)]


@pytest.mark.parametrize("path", [p for p in FILES if p.is_file()], ids=lambda p: p.name)
@pytest.mark.parametrize("symbols", [False, True], ids=["facts", "symbols"])
def test_windowed_facts_are_the_facts_of_the_whole_file(path: Path, symbols: bool) -> None:
    opts = ParseOptions(symbols=symbols)
    windowed = inspect(path, opts)
    whole = inspect_bytes(memoryview(path.read_bytes()), str(path), opts)
    assert windowed.to_json(symbols=symbols) == whole.to_json(symbols=symbols)
    assert windowed.members is None or len(windowed.members) > 1


def test_a_window_reads_its_slice_and_parts_nest(tmp_path: Path) -> None:
    f = tmp_path / "data"
    f.write_bytes(bytes(range(256)))
    with open(f, "rb") as fh:
        w = FileWindow(fh.fileno(), 16, 64)
        assert len(w) == 64
        assert w[0:4] == bytes([16, 17, 18, 19])
        assert w[60:100] == bytes([76, 77, 78, 79])  # clamped to the window, as a buffer is
        inner = part(w, 8, 12)
        assert isinstance(inner, FileWindow) and inner[:] == bytes([24, 25, 26, 27])
        assert bytes(part(b"abcdef", 1, 3)) == b"bc"


def test_a_file_cut_short_under_a_window_is_truncated_not_zeros(tmp_path: Path) -> None:
    f = tmp_path / "data"
    f.write_bytes(b"x" * 4096)
    with open(f, "rb") as fh:
        w = FileWindow(fh.fileno(), 0, 4096)
        os.truncate(f, 1000)
        assert w[0:1000] == b"x" * 1000
        with pytest.raises(Truncated, match="ended at 1000 bytes"):
            w[900:1100]


def test_an_archive_cut_short_is_one_error_naming_it(tmp_path: Path) -> None:
    src = Path("/usr/lib/llvm-14/lib/libLLVMDemangle.a")
    if not src.is_file():
        pytest.skip("needs Debian's llvm-14-dev")
    cut = tmp_path / "cut.a"
    shutil.copyfile(src, cut)
    os.truncate(cut, src.stat().st_size // 2)
    with pytest.raises(FormatError) as exc:
        inspect(cut)
    assert str(cut) in str(exc.value) and "archive" in str(exc.value)
