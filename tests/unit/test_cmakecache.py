"""Reading what a build enabled from its CMakeCache.txt (prebake.package.cmakecache)."""

from __future__ import annotations

from pathlib import Path

import pytest

from prebake.package.cmakecache import MAX_CACHE, CacheError, parse, recorded

CACHE = """# This is the CMakeCache file.
//Build with XNNPACK support.
onnxruntime_USE_XNNPACK:BOOL=ON
XNNPACK_ENABLE_KLEIDIAI:STRING=OFF
HAS_ARM64_BFLOAT16:INTERNAL=1
CMAKE_C_FLAGS:STRING=-O2 -DX=1
EMPTY:STRING=
not a cache line
"""


def test_entries_are_read_by_name_with_their_values(tmp_path: Path) -> None:
    path = tmp_path / "CMakeCache.txt"
    path.write_text(CACHE)
    assert parse(CACHE)["CMAKE_C_FLAGS"] == "-O2 -DX=1"
    got = recorded(path, ("XNNPACK_ENABLE_KLEIDIAI", "onnxruntime_USE_XNNPACK", "EMPTY"))
    assert list(got.items()) == [("XNNPACK_ENABLE_KLEIDIAI", "OFF"),
                                 ("onnxruntime_USE_XNNPACK", "ON"), ("EMPTY", "")]


def test_an_entry_the_build_never_configured_fails_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "CMakeCache.txt"
    path.write_text(CACHE)
    with pytest.raises(CacheError, match=r"has no onnxruntime_USE_ARM_NEON_NCHWC\b"):
        recorded(path, ("onnxruntime_USE_XNNPACK", "onnxruntime_USE_ARM_NEON_NCHWC"))


def test_a_missing_oversized_or_special_cache_fails(tmp_path: Path) -> None:
    with pytest.raises(CacheError, match="no CMake cache"):
        recorded(tmp_path / "absent.txt", ("X",))
    big = tmp_path / "big.txt"
    with open(big, "wb") as fh:
        fh.truncate(MAX_CACHE + 1)
    with pytest.raises(CacheError, match=str(big)):
        recorded(big, ("X",))
    with pytest.raises(CacheError):
        recorded(tmp_path, ("X",))  # a folder
