"""ELF objects, shared libraries and executables built with gcc, g++, clang and zig (cross).

Facts are asserted against the flag that should produce them and cross-checked against
``readelf`` / ``llvm-nm`` (docs/binary-formats.md §4), and against the real onnxruntime-node
libraries.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from prebake.errors import FormatError
from prebake.inspect import ParseOptions, inspect, inspect_bytes
from prebake.inspect.glibc import version_key
from tests import support

SYMS = ParseOptions(symbols=True)
ZIG_CC = [*support.ZIG, "cc"]
ZIG_CXX = [*support.ZIG, "c++"]

SOURCES = {
    "c.c": """#include <stdlib.h>
#include <string.h>
int api_fn(const char *s) { return (int)strtol(s, 0, 10) + (int)strlen(s); }
__attribute__((weak)) int weak_fn(void) { return 1; }
__attribute__((visibility("hidden"))) int hidden_fn(void) { return 2; }
static int local_fn(int x) { return x * 3; }
int use_local(int x) { return local_fn(x); }
""",
    "stat.c": """#include <sys/stat.h>
long file_size(const char *p) { struct stat st; return stat(p, &st) ? -1 : (long)st.st_size; }
""",
    # what glibc >= 2.38 headers emit for strtol in C23 mode (zig's bundled headers do not
    # redirect, so the object references the symbol directly, as the brief allows)
    "c23.c": """extern long __isoc23_strtol(const char *, char **, int);
long parse23(const char *s) { return __isoc23_strtol(s, 0, 0); }
""",
    "x.cpp": """#include <string>
#include <stdexcept>
std::string greet(const std::string &who) {
  if (who.empty()) throw std::invalid_argument("empty");
  return "hello " + who;
}
""",
    "nx.cpp": """int sum(const int *v, int n) {
  int s = 0;
  for (int i = 0; i < n; ++i) s += v[i];
  return s;
}
""",
    "hidden.cpp": """#include <stdexcept>
#include <string>
__attribute__((visibility("default"))) int f(const char *s) {
  try { std::string x(s); if (x.empty()) throw std::runtime_error("e"); return (int)x.size(); }
  catch (...) { return -1; }
}
""",
    "main.c": """int api_fn(const char *s);
int main(int argc, char **argv) { return api_fn(argc > 1 ? argv[1] : "1"); }
""",
}


@pytest.fixture(scope="module")
def bins() -> Path:
    cmds = [
        ["gcc", "-O2", "-c", "c.c", "-o", "c_gcc.o"],
        ["gcc", "-O2", "-c", "stat.c", "-o", "stat.o"],
        ["gcc", "-O2", "-c", "c23.c", "-o", "c23.o"],
        ["clang", "-O2", "-c", "c.c", "-o", "c_clang.o"],
        ["g++", "-O2", "-c", "x.cpp", "-o", "x_gpp.o"],
        ["g++", "-O2", "-fno-exceptions", "-c", "nx.cpp", "-o", "nx_gpp.o"],
        ["gcc", "-O2", "-flto", "-c", "c.c", "-o", "c_lto_slim.o"],
        ["gcc", "-O2", "-flto", "-ffat-lto-objects", "-c", "c.c", "-o", "c_lto_fat.o"],
        ["gcc", "-O2", "-shared", "-fPIC", "-Wl,-soname,libc_gcc.so.1", "c.c", "stat.c",
         "-o", "libc_gcc.so"],
        ["g++", "-O2", "-shared", "-fPIC", "x.cpp", "-o", "libx.so"],
        ["g++", "-O2", "-shared", "-fPIC", "-fvisibility=hidden", "-static-libstdc++",
         "-static-libgcc", "-Wl,--exclude-libs,ALL", "hidden.cpp", "-o", "libhidden.so"],
        ["strip", "libhidden.so"],
        ["gcc", "-O2", "c.c", "main.c", "-o", "exe_pie"],
        ["gcc", "-O2", "-no-pie", "c.c", "main.c", "-o", "exe_nopie"],
        [*ZIG_CC, "-target", "aarch64-linux-gnu.2.28", "-O2", "-c", "c.c", "-o", "c_a64.o"],
        [*ZIG_CC, "-target", "x86-linux-gnu", "-O2", "-c", "c.c", "-o", "c_i686.o"],
        [*ZIG_CC, "-target", "arm-linux-gnueabihf", "-O2", "-c", "c.c", "-o", "c_arm.o"],
        [*ZIG_CC, "-target", "x86_64-linux-gnu.2.38", "-O2", "-std=c2x", "-c", "c23.c",
         "-o", "c23_zig.o"],
        [*ZIG_CC, "-target", "aarch64-linux-gnu.2.28", "-O2", "-shared", "-fPIC", "c.c",
         "stat.c", "-o", "libc_a64.so"],
        [*ZIG_CXX, "-target", "aarch64-linux-gnu", "-O2", "-c", "x.cpp", "-o", "x_libcxx.o"],
    ]
    return support.build("elf", SOURCES, cmds)


def _readelf_version_max(path: Path, family: str) -> str | None:
    out = subprocess.run(["readelf", "-V", "-W", str(path)], capture_output=True, text=True,
                         check=True).stdout
    vers = re.findall(rf"Name: {family}_([0-9.]+)", out)
    return max(vers, key=version_key) if vers else None


def _nm(path: Path, *flags: str) -> set[str]:
    out = subprocess.run(["llvm-nm", "--no-sort", *flags, str(path)], capture_output=True,
                         text=True, check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


def test_gcc_object_facts_and_symbols_match_llvm_nm(bins: Path) -> None:
    f = inspect(bins / "c_gcc.o", SYMS)
    assert (f.format, f.kind, f.os, f.arch) == ("elf", "object", "linux", "x86_64")
    assert f.abi.lto == "none"
    assert f.abi.eh == "none"
    assert f.abi.cxx_stdlib == "none"
    assert f.abi.glibc_max is None  # strtol/strlen are old: the floor is below the table's
    assert f.symbols is not None
    assert set(f.symbols.defined) == _nm(bins / "c_gcc.o", "--extern-only", "--defined-only")
    assert set(f.symbols.undefined) == _nm(bins / "c_gcc.o", "--undefined-only")
    assert "local_fn" not in f.symbols.defined
    assert "hidden_fn" in f.symbols.defined and "hidden_fn" not in f.symbols.exports
    assert f.symbols.weak == {"weak_fn"}


def test_clang_object_matches_gcc_facts(bins: Path) -> None:
    f = inspect(bins / "c_clang.o", SYMS)
    assert (f.format, f.kind, f.arch, f.abi.lto) == ("elf", "object", "x86_64", "none")
    assert f.symbols is not None
    assert set(f.symbols.defined) == _nm(bins / "c_clang.o", "--extern-only", "--defined-only")


def test_cxx_objects_eh_and_stdlib(bins: Path) -> None:
    x = inspect(bins / "x_gpp.o")
    assert x.abi.eh == "native"
    assert any("__cxa_throw" in e for e in x.evidence["eh"])
    assert x.abi.cxx_stdlib == "libstdc++"
    nx = inspect(bins / "nx_gpp.o")
    assert nx.abi.eh == "none"
    lcxx = inspect(bins / "x_libcxx.o")
    assert (lcxx.arch, lcxx.abi.cxx_stdlib) == ("aarch64", "libc++")


def test_gcc_lto_slim_and_fat(bins: Path) -> None:
    slim = inspect(bins / "c_lto_slim.o")
    assert (slim.format, slim.abi.lto) == ("gcc-lto", "gcc-lto")
    fat = inspect(bins / "c_lto_fat.o")
    assert (fat.format, fat.abi.lto) == ("elf", "gcc-lto")


def test_object_glibc_floor_from_table(bins: Path) -> None:
    st = inspect(bins / "stat.o")  # glibc >= 2.33 headers call stat() itself, not __xstat
    undefined = _nm(bins / "stat.o", "--undefined-only")
    if "stat" in undefined:
        assert st.abi.glibc_max == "2.33"
    c23 = inspect(bins / "c23.o")
    assert c23.abi.glibc_max == "2.38"
    assert any("__isoc23_strtol" in e for e in c23.evidence["glibc_max"])
    assert inspect(bins / "c23_zig.o").abi.glibc_max == "2.38"


@pytest.mark.parametrize(
    ("name", "arch", "cls"),
    [("c_a64.o", "aarch64", 64), ("c_i686.o", "i686", 32), ("c_arm.o", "arm", 32)],
)
def test_cross_objects(bins: Path, name: str, arch: str, cls: int) -> None:
    f = inspect(bins / name, SYMS)
    assert (f.format, f.kind, f.arch, f.details["class"]) == ("elf", "object", arch, cls)
    assert f.symbols is not None
    assert set(f.symbols.defined) == _nm(bins / name, "--extern-only", "--defined-only")
    if arch == "arm":
        assert f.details["arm_float_abi"] == "hard"


def test_shared_library_facts_match_readelf(bins: Path) -> None:
    so = bins / "libc_gcc.so"
    f = inspect(so, SYMS)
    assert (f.kind, f.soname) == ("shared-library", "libc_gcc.so.1")
    assert f.needed == ["libc.so.6"]
    assert f.abi.glibc_max == _readelf_version_max(so, "GLIBC")
    assert f.symbols is not None
    assert set(f.symbols.exports) == _nm(so, "-D", "--defined-only", "--extern-only")
    assert f.symbols.versions.get("strtol", "").startswith("GLIBC_")
    cxx = inspect(bins / "libx.so")
    assert "libstdc++.so.6" in (cxx.needed or [])
    assert cxx.abi.cxx_stdlib == "libstdc++"
    assert cxx.abi.glibcxx_max == _readelf_version_max(bins / "libx.so", "GLIBCXX")
    assert cxx.abi.eh == "native"


def test_stripped_static_libstdcxx_is_not_reported_as_c(bins: Path) -> None:
    """libstdc++ linked in and hidden: .dynsym shows no C++, so stdlib is unknown, not "none"."""
    f = inspect(bins / "libhidden.so")
    assert f.needed is not None and not any("stdc++" in n for n in f.needed)
    assert f.abi.eh == "native"  # its landing pads are still there
    assert f.abi.cxx_stdlib is None
    assert inspect(bins / "libc_gcc.so").abi.cxx_stdlib == "none"


def test_cross_shared_library_glibc_floor(bins: Path) -> None:
    so = bins / "libc_a64.so"
    f = inspect(so)
    assert (f.arch, f.kind) == ("aarch64", "shared-library")
    assert f.abi.glibc_max == _readelf_version_max(so, "GLIBC")
    assert version_key(f.abi.glibc_max or "0") <= (2, 28)


def test_executables(bins: Path) -> None:
    pie = inspect(bins / "exe_pie")
    nopie = inspect(bins / "exe_nopie")
    assert pie.kind == "executable" and nopie.kind == "executable"
    assert pie.needed == ["libc.so.6"]


@pytest.mark.parametrize(("arch", "folder", "exports"), [
    ("x86_64", "x64", {"OrtGetApiBase", "OrtSessionOptionsAppendExecutionProvider_CPU",
                       "OrtSessionOptionsAppendExecutionProvider_CUDA",
                       "OrtSessionOptionsAppendExecutionProvider_Tensorrt"}),
    ("aarch64", "arm64", {"OrtGetApiBase", "OrtSessionOptionsAppendExecutionProvider_CPU"}),
])
def test_onnxruntime_node_linux(ort_node: Path, arch: str, folder: str, exports: set[str]) -> None:
    so = ort_node / "bin/napi-v6/linux" / folder / "libonnxruntime.so.1"
    f = inspect(so, SYMS)
    assert (f.format, f.kind, f.os, f.arch) == ("elf", "shared-library", "linux", arch)
    assert f.soname == "libonnxruntime.so.1"
    assert f.abi.glibc_max == "2.28" == _readelf_version_max(so, "GLIBC")
    assert f.abi.glibcxx_max == "3.4.22" == _readelf_version_max(so, "GLIBCXX")
    assert f.abi.cxx_stdlib == "libstdc++"
    assert "libstdc++.so.6" in (f.needed or [])
    assert f.details["runpath"] == ["$ORIGIN"]
    assert f.symbols is not None
    assert set(f.symbols.exports) == exports  # VERS_1.30.0 (SHN_ABS) is not an export
    assert not [n for n in f.symbols.exports if n.startswith(("_ZN6google8protobuf", "_ZN4absl"))]


def test_truncated_elf_is_a_clean_error(bins: Path) -> None:
    data = (bins / "libc_gcc.so").read_bytes()
    for cut in (10, 60, len(data) // 2):
        try:
            inspect_bytes(data[:cut], "cut.so")
        except FormatError as exc:
            assert "cut.so" in str(exc)
