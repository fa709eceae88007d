"""Mach-O facts on binaries built here (zig, clang, llvm-lipo) and on onnxruntime-node (darwin).

Each fact is cross-checked against ``llvm-objdump --macho --private-headers`` or ``llvm-nm`` where
those tools print it, so a test fails when the reader and LLVM disagree.
"""

from __future__ import annotations

import contextlib
import random
import re
import struct
import subprocess
from pathlib import Path

import pytest

from prebake.errors import FormatError
from prebake.inspect import ParseOptions, inspect, inspect_bytes
from tests import support

SYMBOLS = ParseOptions(symbols=True)

C_SRC = """
int cfunc(int x) { return x * 2; }
extern int other(void);
int call(void) { return other(); }
"""
MAIN_SRC = "int other(void) { return 1; }\nint main(void) { return 0; }\n"
CXX_SRC = """
#include <string>
#include <vector>
extern "C" int c_api(int x) { std::vector<int> v(x); return (int)v.size(); }
std::string cxx_api(const std::string& s) { return s + "!"; }
__attribute__((weak)) int weak_fn() { return 1; }
__attribute__((visibility("hidden"))) int hidden_fn() { return 2; }
extern int undefined_thing(int);
int use_it() { return undefined_thing(3) + hidden_fn(); }
"""


def zig(*args: str) -> list[str]:
    return [*support.ZIG, *args]


@pytest.fixture(scope="module")
def built() -> Path:
    """Objects and dylibs for x86_64-macos 11.0 and aarch64-macos 13.3, plus a fat dylib."""
    return support.build("macho", {"c.c": C_SRC, "m.cpp": CXX_SRC, "main.c": MAIN_SRC}, [
        zig("cc", "-O2", "-target", "x86_64-macos.11.0", "-c", "c.c", "-o", "c_x86.o"),
        zig("c++", "-O2", "-target", "aarch64-macos.13.3", "-c", "m.cpp", "-o", "m_arm.o"),
        zig("cc", "-O2", "-target", "aarch64-macos.13.3", "-shared", "c.c", "-o",
            "libc_arm.dylib", "-Wl,-undefined,dynamic_lookup",
            "-Wl,-install_name,@rpath/libc_arm.dylib", "-Wl,-rpath,@loader_path/../lib"),
        # C only: a C++ dylib would make zig build libc++ for macOS first (~1 min cold); the
        # libc++ facts of a linked dylib are asserted on onnxruntime's real one below.
        zig("cc", "-O2", "-target", "x86_64-macos.11.0", "-shared", "c.c", "-o",
            "libc_x86.dylib", "-Wl,-undefined,dynamic_lookup"),
        zig("cc", "-O2", "-target", "x86_64-macos.11.0", "c.c", "main.c", "-o", "exe"),
        ["clang", "-O2", "-c", "--target=x86_64-apple-macos10.12", "c.c", "-o", "c_1012.o"],
        ["llvm-lipo-14", "-create", "libc_x86.dylib", "libc_arm.dylib", "-output", "libfat.dylib"],
        ["llvm-ar", "--format=darwin", "rcs", "libmixed.a", "c_x86.o", "c_1012.o"],
        ["llvm-strip-14", "--strip-all", "libc_arm.dylib", "-o", "libc_arm_stripped.dylib"],
        ["clang", "-c", "--target=arm64e-apple-macos11", "c.c", "-o", "c_arm64e.o"],
        ["clang", "-c", "--target=arm64-apple-ios14", "c.c", "-o", "c_ios.o"],
        ["clang", "-O2", "-c", "--target=arm64-apple-macos12", "c.c", "-o", "c_a12.o"],
        ["llvm-ar", "--format=darwin", "rcs", "libarm.a", "c_a12.o"],
        ["llvm-lipo-14", "-create", "libmixed.a", "libarm.a", "-output", "libuniversal.a"],
    ])


def objdump_headers(path: Path) -> str:
    return subprocess.run(["llvm-objdump", "--macho", "--private-headers", str(path)],
                          capture_output=True, text=True, check=True).stdout


def nm(path: Path, *flags: str) -> set[str]:
    out = subprocess.run(["llvm-nm", "-j", *flags, str(path)], capture_output=True, text=True,
                         check=True).stdout
    return {line for line in out.splitlines() if line}


def llvm_build_version(path: Path) -> tuple[str, str]:
    """(minos, sdk) as llvm-objdump prints them for LC_BUILD_VERSION."""
    text = objdump_headers(path)
    minos = re.search(r"^\s+minos (\S+)", text, re.M)
    sdk = re.search(r"^\s+sdk (\S+)", text, re.M)
    assert minos and sdk, text
    return minos.group(1), sdk.group(1)


def test_zig_objects_macos_min_arch_and_symbols(built: Path) -> None:
    c = inspect(built / "c_x86.o", SYMBOLS)
    assert (c.format, c.kind, c.os, c.arch) == ("macho", "object", "macos", "x86_64")
    assert (c.abi.macos_min, c.abi.macos_sdk) == ("11.0", None)  # objects carry sdk 0
    assert llvm_build_version(built / "c_x86.o")[0] == "11.0"
    assert c.abi.cxx_stdlib == "none" and c.abi.lto == "none" and c.abi.eh == "none"
    assert c.symbols is not None
    assert set(c.symbols.defined) == nm(built / "c_x86.o", "-g", "--defined-only") == {
        "_cfunc", "_call"}
    assert set(c.symbols.undefined) == nm(built / "c_x86.o", "-u") == {"_other"}
    assert c.needed is None and c.soname is None

    m = inspect(built / "m_arm.o", SYMBOLS)
    assert (m.arch, m.abi.macos_min, m.details["cpu"]) == ("aarch64", "13.3", "arm64")
    assert m.abi.cxx_stdlib == "libc++"
    assert "St3__1" in m.evidence["cxx_stdlib"][0]
    assert m.abi.eh == "native"  # std::vector can throw: personality + landing pads
    assert m.symbols is not None
    assert set(m.symbols.defined) == nm(built / "m_arm.o", "-g", "--defined-only")
    assert set(m.symbols.undefined) == nm(built / "m_arm.o", "-u")
    assert "__Z15undefined_thingi" in m.symbols.undefined
    assert "__Z7weak_fnv" in m.symbols.weak
    # hidden visibility (N_PEXT): defined for the static link, never exported
    assert "__Z9hidden_fnv" in m.symbols.defined
    assert "__Z9hidden_fnv" not in m.symbols.exports
    assert "_c_api" in m.symbols.exports


def test_zig_dylib_install_name_rpath_needed(built: Path) -> None:
    lib = built / "libc_arm.dylib"
    f = inspect(lib, SYMBOLS)
    assert (f.format, f.kind, f.os, f.arch) == ("macho", "shared-library", "macos", "aarch64")
    assert (f.abi.macos_min, f.abi.macos_sdk) == llvm_build_version(lib)
    assert f.abi.macos_min == "13.3"
    headers = objdump_headers(lib)
    assert f"name {f.soname} (offset" in headers
    assert f.soname == "@rpath/libc_arm.dylib"
    assert f.details["rpaths"] == ["@loader_path/../lib"]
    assert "/usr/lib/libSystem.B.dylib" in (f.needed or [])
    loads = re.findall(r"cmd LC_LOAD_DYLIB\n\s+cmdsize \d+\n\s+name (\S+)", headers)
    assert f.needed == loads
    assert f.symbols is not None
    assert {"_cfunc", "_call"} <= set(f.symbols.exports)
    assert set(f.symbols.exports) == nm(lib, "-g", "--defined-only")

    x86 = inspect(built / "libc_x86.dylib")
    assert (x86.arch, x86.abi.macos_min, x86.abi.cxx_stdlib) == ("x86_64", "11.0", "none")
    assert x86.soname == "libc_x86.dylib"


def test_version_min_macosx_from_clang(built: Path) -> None:
    f = inspect(built / "c_1012.o")
    assert "LC_VERSION_MIN_MACOSX" in objdump_headers(built / "c_1012.o")
    assert (f.os, f.abi.macos_min) == ("macos", "10.12")
    assert f.evidence["macos_min"] == ["LC_VERSION_MIN_MACOSX minos 10.12"]


def test_fat_dylib_has_per_slice_facts(built: Path) -> None:
    f = inspect(built / "libfat.dylib", SYMBOLS)
    assert (f.format, f.kind, f.os, f.arch) == ("macho-fat", "shared-library", "macos", None)
    assert f.slices is not None and len(f.slices) == 2
    by_arch = {s.arch: s for s in f.slices}
    assert by_arch["x86_64"].abi.macos_min == "11.0"
    assert by_arch["aarch64"].abi.macos_min == "13.3"
    assert by_arch["aarch64"].soname == "@rpath/libc_arm.dylib"
    assert f.abi.macos_min == "13.3"  # slices disagree: the highest floor, and counts
    assert f.counts["macos_min"] == {"11.0": 1, "13.3": 1}
    assert f.details["archs"] == ["x86_64", "arm64"]
    lipo = subprocess.run(["llvm-lipo-14", "-archs", str(built / "libfat.dylib")],
                          capture_output=True, text=True, check=True).stdout.split()
    assert lipo == f.details["archs"]
    # each slice equals the thin file it came from
    thin = inspect(built / "libc_arm.dylib", SYMBOLS)
    assert by_arch["aarch64"].symbols is not None and thin.symbols is not None
    assert by_arch["aarch64"].symbols.exports == thin.symbols.exports


def test_fat64_header(built: Path) -> None:
    """CAFEBABF (fat_arch_64) — no LLVM 14 tool writes it, so this test script assembles one
    around two real slices, laid out as ``<mach-o/fat.h>`` defines."""
    slices = [(built / "c_x86.o").read_bytes(), (built / "m_arm.o").read_bytes()]
    cpus = [(0x01000007, 3), (0x0100000C, 0)]
    head = struct.pack(">II", 0xCAFEBABF, 2)
    offset, body, records = 0x4000, b"", b""
    for (cpu, sub), data in zip(cpus, slices, strict=True):
        records += struct.pack(">IIQQII", cpu, sub, offset + len(body), len(data), 14, 0)
        body += data + b"\0" * (-len(data) % 0x4000)
    blob = (head + records).ljust(offset, b"\0") + body
    f = inspect_bytes(blob, "fat64.o")
    assert f.format == "macho-fat" and f.details["fat_arch"] == "fat_arch_64"
    assert [(s.arch, s.abi.macos_min) for s in f.slices or []] == [
        ("x86_64", "11.0"), ("aarch64", "13.3")]
    assert f.kind == "object"


def test_java_class_is_not_fat_macho() -> None:
    # A class file header: CAFEBABE, minor 0, major 65 (Java 21).
    with pytest.raises(FormatError, match="Java class file"):
        inspect_bytes(bytes.fromhex("cafebabe00000041") + b"\0" * 56, "Hello.class")


def test_darwin_archive_members_keep_their_minimum(built: Path) -> None:
    f = inspect(built / "libmixed.a")
    assert f.format == "archive"
    mins = {Path(m.path).name: m.abi.macos_min for m in f.members or []}
    assert sorted(v or "" for v in mins.values()) == ["10.12", "11.0"]
    assert all(m.format == "macho" for m in f.members or [])


def test_truncated_macho_is_a_clean_error(built: Path) -> None:
    data = (built / "libc_arm.dylib").read_bytes()
    for cut in (8, 31, 100, 1000):
        with pytest.raises(FormatError, match=r"libc_arm\.dylib"):
            inspect_bytes(data[:cut], "libc_arm.dylib", SYMBOLS)


def test_onnxruntime_node_darwin_arm64(ort_node: Path) -> None:
    """docs/binary-formats.md §5: the facts of the real onnxruntime-node 1.30.0 darwin/arm64
    dylib."""
    lib = ort_node / "bin/napi-v6/darwin/arm64/libonnxruntime.1.30.0.dylib"
    f = inspect(lib, SYMBOLS)
    assert (f.format, f.kind, f.os, f.arch) == ("macho", "shared-library", "macos", "aarch64")
    assert (f.abi.macos_min, f.abi.macos_sdk) == ("14.0", "26.2") == llvm_build_version(lib)
    assert f.soname == "@rpath/libonnxruntime.1.dylib"
    assert f.details["rpaths"] == ["@loader_path"]
    assert f.details["current_version"] == "1.30.0"
    assert f.details["uuid"] == "89ee7b90f9553726b14183314c7c1088"
    assert f.details["code_signature"] is True
    assert f.needed is not None and len(f.needed) == 15
    assert "/usr/lib/libc++.1.dylib" in f.needed
    assert f.abi.cxx_stdlib == "libc++"
    assert f.abi.eh == "native"
    assert f.symbols is not None
    assert f.symbols.exports == [
        "_OrtGetApiBase", "_OrtSessionOptionsAppendExecutionProvider_CPU",
        "_OrtSessionOptionsAppendExecutionProvider_CoreML"]
    assert set(f.symbols.exports) == nm(lib, "-g", "--defined-only")
    assert set(f.symbols.undefined) == nm(lib, "-u")
    assert not any(s.startswith(("__ZN6google8protobuf", "__ZN4absl")) for s in f.symbols.exports)

    binding = inspect(ort_node / "bin/napi-v6/darwin/arm64/onnxruntime_binding.node")
    assert binding.needed is not None and binding.needed[0] == "@rpath/libonnxruntime.1.dylib"
    assert binding.abi.macos_min == "14.0"


def test_stripped_dylib_exports_come_from_the_trie(built: Path) -> None:
    lib = built / "libc_arm_stripped.dylib"
    f = inspect(lib, SYMBOLS)
    assert not nm(lib, "-g", "--defined-only")  # no defined nlist entries left
    out = subprocess.run(["llvm-objdump", "--macho", "--exports-trie", str(lib)],
                         capture_output=True, text=True, check=True).stdout
    trie = sorted(re.findall(r"^0x[0-9A-F]+\s+(\S+)$", out, re.M))
    assert f.symbols is not None
    assert f.symbols.exports == trie
    assert {"_cfunc", "_call"} <= set(f.symbols.defined)
    # stripped: no proof that no C++ library was linked in statically, so unknown, not "none"
    assert f.abi.cxx_stdlib is None and f.abi.eh is None
    unstripped = inspect(built / "libc_arm.dylib")
    assert (unstripped.abi.cxx_stdlib, unstripped.abi.eh) == ("none", "none")


def test_arm64e_and_non_macos_platforms(built: Path) -> None:
    e = inspect(built / "c_arm64e.o")
    assert (e.arch, e.details["cpu"], e.abi.macos_min) == ("aarch64", "arm64e", "11.0")
    ios = inspect(built / "c_ios.o")
    assert (ios.os, ios.abi.macos_min) == (None, None)  # an iOS object has no macOS floor
    assert (ios.details["platform"], ios.details["min_version"]) == ("ios", "14.0")


def test_universal_static_library(built: Path) -> None:
    """lipo of two static archives: each slice is an archive, each member keeps its floor."""
    f = inspect(built / "libuniversal.a")
    assert (f.format, f.kind, f.os) == ("macho-fat", "static-library", "macos")
    assert [(s.format, s.arch) for s in f.slices or []] == [
        ("archive", "x86_64"), ("archive", "aarch64")]
    mins = sorted(m.abi.macos_min or "" for s in f.slices or [] for m in s.members or [])
    assert mins == ["10.12", "11.0", "12.0"]
    assert f.abi.macos_min == "12.0"


def test_mutated_macho_gives_only_clean_errors(built: Path) -> None:
    """Random byte flips in headers and load commands of real files: a Facts or a FormatError."""
    rnd = random.Random(5)
    for name in ("m_arm.o", "libc_arm.dylib", "libfat.dylib"):
        data = (built / name).read_bytes()
        for _ in range(150):
            b = bytearray(data[: rnd.randrange(8, len(data))] if rnd.random() < 0.2 else data)
            for _ in range(rnd.randrange(1, 12)):
                b[rnd.randrange(min(len(b), 2048))] = rnd.randrange(256)
            with contextlib.suppress(FormatError):
                inspect_bytes(bytes(b), name, SYMBOLS)


def test_executable(built: Path) -> None:
    f = inspect(built / "exe", SYMBOLS)
    assert (f.format, f.kind, f.arch, f.abi.macos_min) == ("macho", "executable", "x86_64", "11.0")
    assert f.soname is None and f.needed == ["/usr/lib/libSystem.B.dylib"]
    header = objdump_headers(built / "exe")
    assert re.search(r"^MH_MAGIC_64\s+X86_64\s+ALL\s+\S+\s+EXECUTE ", header, re.M)
    assert f.symbols is not None and "_main" in f.symbols.defined
