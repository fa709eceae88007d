"""LLVM bitcode objects from real clang 14 / emcc 3.1.6 ``-flto`` builds (docs/binary-formats.md
§2).

Thin vs full comes from the module's summary block, the triple from the MODULE record, and the
symbols from the irsymtab: they must equal what ``llvm-nm`` prints for the same files.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from prebake.errors import FormatError
from prebake.inspect import ParseOptions, inspect
from prebake.inspect.facts import Facts
from tests import support

pytestmark = pytest.mark.skipif(shutil.which("clang") is None, reason="needs clang")

SOURCES = {
    "f.c": """extern int ext_fn(int);
int g = 3;
static __attribute__((noinline)) int helper(int x) { return x * g; }
__attribute__((weak)) int weak_fn(int x) { return x + 1; }
__attribute__((visibility("hidden"))) int vis_hidden(int x) { return x; }
int api_fn(int x) { return ext_fn(x) + helper(x) + weak_fn(x); }
""",
    "k.cpp": """#include <string>
#include <vector>
std::string joined(const std::vector<std::string>& v) {
  std::string out; for (const auto& s : v) out += s; return out;
}
""",
    "w.c": "int wasm_native(int x) { return x - 1; }\n",
}

COMMANDS = [
    ["clang", "-O2", "-flto", "-c", "f.c", "-o", "full.o"],
    ["clang", "-O2", "-flto=thin", "-c", "f.c", "-o", "thin.o"],
    ["clang", "-O2", "-c", "-emit-llvm", "f.c", "-o", "plain.bc"],
    ["clang", "-O2", "-flto", "-c", "--target=arm64-apple-macos11", "f.c", "-o", "darwin_arm64.o"],
    ["clang", "-O2", "-flto", "-c", "--target=x86_64-apple-macos11", "f.c", "-o", "darwin_x64.o"],
    ["clang++", "-O2", "-flto", "-c", "k.cpp", "-o", "cxx_full.o"],
    ["emcc", "-O2", "-flto", "-c", "f.c", "-o", "em_full.o"],
    ["emcc", "-O2", "-flto=thin", "-c", "f.c", "-o", "em_thin.o"],
    ["emcc", "-O2", "-c", "w.c", "-o", "em_native.o"],
    ["emar", "rcs", "libem_lto.a", "em_full.o"],
    ["emar", "rcs", "libem_mixed_lto.a", "em_full.o", "em_native.o"],
    ["llvm-ar", "rcs", "libx64_lto.a", "full.o", "cxx_full.o"],
]

EXPECTED = {
    # file: (os, arch, lto_kind, wrapped)
    "full.o": ("linux", "x86_64", "full", False),
    "thin.o": ("linux", "x86_64", "thin", False),
    "plain.bc": ("linux", "x86_64", None, False),
    "darwin_arm64.o": ("macos", "aarch64", None, True),
    "darwin_x64.o": ("macos", "x86_64", None, True),
    "cxx_full.o": ("linux", "x86_64", "full", False),
    "em_full.o": ("emscripten", "wasm32", "full", False),
    "em_thin.o": ("emscripten", "wasm32", "thin", False),
}


@pytest.fixture(scope="module")
def built() -> Path:
    return support.build("bitcode-inspect", SOURCES, COMMANDS)


def facts(path: Path) -> Facts:
    return inspect(path, ParseOptions(symbols=True))


@pytest.mark.parametrize("name", list(EXPECTED))
def test_bitcode_facts(built: Path, name: str) -> None:
    os_, arch, lto_kind, wrapped = EXPECTED[name]
    f = facts(built / name)
    assert (f.format, f.kind, f.abi.lto) == ("llvm-bitcode", "object", "llvm-bitcode")
    assert (f.os, f.arch) == (os_, arch)
    assert f.details["lto_kind"] == lto_kind
    assert ("wrapper" in f.details) is wrapped
    assert f.details["producer"] == "14.0.6"
    # the personality the functions name says which EH the IR holds (llvm-nm lists it as
    # undefined): the C sources name none; the C++ one has landing pads (__gxx_personality_v0)
    assert f.abi.eh == ("native" if name == "cxx_full.o" else "none"), f.evidence


def test_wrapper_cputype_is_not_trusted(built: Path) -> None:
    # clang 14 leaves cputype unset for arm64; the triple decides the arch (§2.1)
    assert facts(built / "darwin_arm64.o").details["wrapper"]["cputype"] == "0xffffffff"
    assert facts(built / "darwin_x64.o").details["wrapper"]["cputype"] == "0x01000007"


def _llvm_nm(path: Path) -> tuple[set[str], set[str], set[str]]:
    out = subprocess.run(["llvm-nm", str(path)], capture_output=True, text=True,
                         check=True).stdout
    defined, undefined, weak = set(), set(), set()
    for m in re.finditer(r"^\S*\s+([A-Za-z])\s+(\S+)$", out, re.M):
        kind, name = m.group(1), m.group(2)
        if kind == "U":
            undefined.add(name)
        elif kind.isupper():
            defined.add(name)
            if kind in "WV":
                weak.add(name)
    return defined, undefined, weak


@pytest.mark.parametrize("name", ["full.o", "thin.o", "darwin_arm64.o", "cxx_full.o",
                                  "em_full.o"])
def test_symbols_match_llvm_nm(built: Path, name: str) -> None:
    f = facts(built / name)
    assert f.symbols is not None
    defined, undefined, weak = _llvm_nm(built / name)
    assert set(f.symbols.defined) == defined
    assert set(f.symbols.undefined) == undefined
    assert f.symbols.weak == weak


def test_hidden_and_local_symbols(built: Path) -> None:
    f = facts(built / "full.o")
    assert f.symbols is not None
    assert "helper" not in f.symbols.defined  # internal linkage
    assert "vis_hidden" in f.symbols.defined and "vis_hidden" not in f.symbols.exports
    assert f.symbols.undefined == ["ext_fn"]


def test_archives_of_bitcode(built: Path) -> None:
    em = facts(built / "libem_lto.a")
    assert em.members is not None and [m.format for m in em.members] == ["llvm-bitcode"]
    assert em.abi.lto == "llvm-bitcode"
    x64 = facts(built / "libx64_lto.a")
    assert x64.abi.lto == "llvm-bitcode" and x64.arch == "x86_64"
    mixed = facts(built / "libem_mixed_lto.a")
    assert mixed.abi.lto == "mixed"
    assert mixed.counts["lto"] == {"llvm-bitcode": 1, "none": 1}


def test_truncated_and_corrupt_bitcode(built: Path, tmp_path: Path) -> None:
    for name in ("full.o", "darwin_arm64.o"):
        data = (built / name).read_bytes()
        # the wrapper pads after the stream: cut inside the stream it declares
        stream_end = 20 + int.from_bytes(data[12:16], "little") if name.startswith("darwin") \
            else len(data)
        for cut in (6, 40, len(data) // 2, stream_end - 3):
            bad = tmp_path / f"{cut}-{name}"
            bad.write_bytes(data[:cut])
            with pytest.raises(FormatError, match=re.escape(str(bad))):
                inspect(bad)
