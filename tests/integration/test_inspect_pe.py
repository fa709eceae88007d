"""PE images and COFF objects built here (mingw-w64, clang-cl, zig, dlltool) and onnxruntime-node's
win32 DLLs; facts cross-checked against ``llvm-readobj`` and ``llvm-nm`` output.
"""

from __future__ import annotations

import contextlib
import json
import random
import re
import struct
import subprocess
from pathlib import Path

import pytest

from prebake.errors import FormatError
from prebake.inspect import ParseOptions, inspect, inspect_bytes
from prebake.inspect.facts import LTO_KINDS
from tests import support

SYMBOLS = ParseOptions(symbols=True)

W_C = """
__declspec(dllexport) int wfunc(int x) { return x + 1; }
__attribute__((weak)) int wweak(void) { return 3; }
extern int wext(int);
int wcall(void) { return wext(2); }
"""
EXT_C = "int wext(int x) { return x; }\n"
WX_CPP = """
#include <string>
__declspec(dllexport) std::string greet(const std::string& s) { return "hi " + s; }
extern "C" __declspec(dllexport) int cfn(int x) { return x; }
"""
DM_C = """
#pragma detect_mismatch("RuntimeLibrary", "MT_StaticRelease")
#pragma comment(lib, "advapi32")
int f(void) { return 0; }
"""
ZL_C = '#pragma comment(lib, "advapi32")\nint f(void) { return 0; }\n'
DEF = "LIBRARY foo.dll\nEXPORTS\n  foo_fn\n  foo_data DATA\n"
VER_RC = """1 VERSIONINFO
FILEVERSION 1,2,3,4
PRODUCTVERSION 5,6,7,8
BEGIN
END
"""
MINGW = "x86_64-w64-mingw32-"


def cl(*args: str) -> list[str]:
    return ["clang", "--driver-mode=cl", "/c", "/O2", *args]


@pytest.fixture(scope="module")
def mingw() -> Path:
    return support.build("pe-mingw", {"w.c": W_C, "ext.c": EXT_C, "wx.cpp": WX_CPP, "x.def": DEF,
                                      "ver.rc": VER_RC}, [
        [MINGW + "gcc", "-O2", "-c", "w.c", "-o", "w.o"],
        [MINGW + "gcc", "-O2", "-c", "-Wa,-mbig-obj", "w.c", "-o", "w_big.o"],
        [MINGW + "g++", "-O2", "-c", "wx.cpp", "-o", "wx.o"],
        [MINGW + "gcc", "-O2", "-shared", "w.c", "ext.c", "-o", "w.dll"],
        [MINGW + "windres", "ver.rc", "-O", "coff", "-o", "ver.o"],
        [MINGW + "gcc", "-O2", "-shared", "w.c", "ext.c", "ver.o", "-o", "wver.dll"],
        [MINGW + "g++", "-O2", "-shared", "wx.cpp", "-o", "wx.dll"],
        [MINGW + "g++", "-O2", "-shared", "-static-libstdc++", "-static-libgcc", "wx.cpp", "-o",
         "wx_static.dll"],
        ["i686-w64-mingw32-gcc", "-O2", "-shared", "w.c", "ext.c", "-o", "w32.dll"],
        [MINGW + "dlltool", "-d", "x.def", "-l", "libfoo.dll.a"],
        ["llvm-dlltool", "-m", "i386:x86-64", "-d", "x.def", "-l", "foo.lib"],
    ])


@pytest.fixture(scope="module")
def clangcl() -> Path:
    """clang-cl stands in for cl.exe: the same /DEFAULTLIB and /FAILIFMISMATCH directives."""
    return support.build("pe-clangcl", {"w.c": W_C, "dm.c": DM_C, "ext.c": EXT_C, "zl.c": ZL_C}, [
        *[cl(f"/{rt}", "w.c", f"/Fow_{rt}.obj") for rt in ("MD", "MT", "MDd", "MTd")],
        cl("/MD", "dm.c", "/Fodm.obj"),
        cl("/MD", "--target=aarch64-pc-windows-msvc", "w.c", "/Fow_arm64.obj"),
        cl("/MD", "--target=i686-pc-windows-msvc", "w.c", "/Fow_x86.obj"),
        cl("/MD", "-flto", "w.c", "/Fow_lto.obj"),
        cl("/MD", "/Zl", "zl.c", "/Fozl.obj"),
        cl("/MD", "ext.c", "/Foext_MD.obj"),
        ["llvm-lib", "/out:md.lib", "w_MD.obj", "ext_MD.obj"],
        ["llvm-lib", "/out:mixed.lib", "w_MD.obj", "w_MT.obj", "ext_MD.obj"],
    ])


@pytest.fixture(scope="module")
def zigwin() -> Path:
    """zig's x86_64-windows-gnu links against UCRT with lld (the first build compiles zig's
    mingw runtime, ~90 s, cached in ZIG_GLOBAL_CACHE_DIR)."""
    return support.build("pe-zig", {"w.c": W_C, "ext.c": EXT_C}, [
        [*support.ZIG, "cc", "-O2", "-target", "x86_64-windows-gnu", "-shared", "w.c", "ext.c",
         "-o", "w.dll"],
    ])


def readobj(path: Path, *flags: str) -> str:
    return subprocess.run(["llvm-readobj", *flags, str(path)], capture_output=True, text=True,
                          check=True).stdout


def readobj_imports(path: Path) -> tuple[list[str], list[str]]:
    """(imported DLLs, delay-imported DLLs) in order, as llvm-readobj --coff-imports lists them."""
    text = readobj(path, "--coff-imports")
    plain = re.findall(r"^Import \{\n\s+Name: (\S+)", text, re.M)
    delay = re.findall(r"^DelayImport \{\n\s+Name: (\S+)", text, re.M)
    return plain, delay


def all_imports(path: Path) -> list[str]:
    """The load-time imports (``needed``), with the check that there are no delay imports."""
    plain, delay = readobj_imports(path)
    assert delay == []
    return plain


def readobj_exports(path: Path) -> list[str]:
    return re.findall(r"^\s+Name: (\S+)", readobj(path, "--coff-exports"), re.M)


def nm(path: Path, *flags: str) -> set[str]:
    out = subprocess.run(["llvm-nm", "-j", *flags, str(path)], capture_output=True, text=True,
                         check=True).stdout
    return {line for line in out.splitlines() if line}


# ---- COFF objects -------------------------------------------------------------------------------

@pytest.mark.parametrize(("rt", "lib"), [("MD", "msvcrt"), ("MT", "libcmt"), ("MDd", "msvcrtd"),
                                         ("MTd", "libcmtd")])
def test_clang_cl_objects_runtime_from_defaultlib(clangcl: Path, rt: str, lib: str) -> None:
    f = inspect(clangcl / f"w_{rt}.obj", SYMBOLS)
    assert (f.format, f.kind, f.os, f.arch) == ("coff", "object", "windows", "x86_64")
    assert f.abi.msvc_runtime == rt
    assert f.evidence["msvc_runtime"] == [f".drectve /DEFAULTLIB:{lib}.lib"]
    assert f.details["toolchain"] == "msvc"
    assert f.details["dllexports"] == ["wfunc"]
    assert f.abi.lto == "none"
    sy = f.symbols
    assert sy is not None
    assert set(sy.defined) == nm(clangcl / f"w_{rt}.obj", "-g", "--defined-only")
    assert set(sy.undefined) == nm(clangcl / f"w_{rt}.obj", "-u") == {"wext"}
    assert sy.weak == {"wweak"}


def test_failifmismatch_wins_over_defaultlib(clangcl: Path) -> None:
    f = inspect(clangcl / "dm.obj")
    # /MD put msvcrt.lib in the directives, but the pragma says MT_StaticRelease: the more
    # precise marker wins, quoted as evidence.
    assert "msvcrt.lib" in f.details["defaultlibs"]
    assert "advapi32.lib" in f.details["defaultlibs"]
    assert f.abi.msvc_runtime == "MT"
    assert f.evidence["msvc_runtime"] == [
        '.drectve /FAILIFMISMATCH:"RuntimeLibrary=MT_StaticRelease"']


def test_zl_object_has_no_runtime_marker(clangcl: Path) -> None:
    """/Zl drops the CRT /DEFAULTLIB: nothing says which runtime, so none is reported."""
    f = inspect(clangcl / "zl.obj")
    assert f.details["defaultlibs"] == ["advapi32.lib"]
    assert f.abi.msvc_runtime is None and "msvc_runtime" not in f.evidence


def test_coff_object_machines(clangcl: Path) -> None:
    arm = inspect(clangcl / "w_arm64.obj")
    x86 = inspect(clangcl / "w_x86.obj")
    assert (arm.arch, arm.details["machine"]) == ("aarch64", "ARM64")
    assert (x86.arch, x86.details["machine"]) == ("i686", "I386")
    assert "IMAGE_FILE_MACHINE_ARM64" in readobj(clangcl / "w_arm64.obj", "--file-headers")


def test_mingw_objects_regular_and_bigobj(mingw: Path) -> None:
    reg = inspect(mingw / "w.o", SYMBOLS)
    big = inspect(mingw / "w_big.o", SYMBOLS)
    assert (mingw / "w_big.o").read_bytes()[:4] == b"\0\0\xff\xff"
    assert "bigobj" not in reg.details and big.details["bigobj"] is True
    for f in (reg, big):
        assert (f.format, f.kind, f.arch, f.abi.msvc_runtime) == ("coff", "object", "x86_64", None)
        assert f.details["toolchain"] == "mingw"
        assert f.details["compiler_ident"].startswith("GCC: (GNU)")
        assert f.details["dllexports"] == ["wfunc"]
        assert f.abi.eh == "none"
    assert reg.symbols is not None and big.symbols is not None
    assert reg.symbols.defined == big.symbols.defined
    assert reg.symbols.undefined == big.symbols.undefined == ["wext"]
    # GNU weak: llvm-nm prints wweak "w" (NoLibrary search); its fallback is defined here,
    # so prebake reports it defined and weak.
    assert reg.symbols.weak == {"wweak"}
    assert set(reg.symbols.defined) == nm(mingw / "w.o", "-g", "--defined-only") | {"wweak"}
    assert set(big.symbols.defined) == nm(mingw / "w_big.o", "-g", "--defined-only") | {"wweak"}


def test_mingw_cxx_object_is_libstdcxx(mingw: Path) -> None:
    f = inspect(mingw / "wx.o", SYMBOLS)
    assert f.abi.cxx_stdlib == "libstdc++"
    assert f.abi.eh == "native"
    assert "__gxx_personality_seh0" in f.evidence["eh"][0]
    assert f.symbols is not None
    assert set(f.symbols.undefined) == nm(mingw / "wx.o", "-u")


def test_static_library_runtime_summary(clangcl: Path) -> None:
    """A .lib's runtime comes from its members' .drectve; disagreeing members are counted."""
    md = inspect(clangcl / "md.lib")
    assert (md.format, md.kind, md.abi.msvc_runtime) == ("archive", "static-library", "MD")
    mixed = inspect(clangcl / "mixed.lib")
    assert mixed.abi.msvc_runtime is None
    assert mixed.counts["msvc_runtime"] == {"MD": 2, "MT": 1}
    by_member = {m.abi.msvc_runtime for m in mixed.members or []}
    assert by_member == {"MD", "MT"}


def test_clang_cl_flto_is_bitcode_not_ltcg(clangcl: Path) -> None:
    """clang-cl -flto (and /GL, which clang-cl 14 ignores) is LLVM bitcode, never a COFF object."""
    f = inspect(clangcl / "w_lto.obj")
    assert (f.format, f.abi.lto) == ("llvm-bitcode", "llvm-bitcode")


def test_ltcg_anonymous_object() -> None:
    """No MSVC here, and clang-cl 14 ignores /GL (clang-cl -flto writes LLVM bitcode, which the
    bitcode reader handles). This script writes the ANON_OBJECT_HEADER_V2 that cl /GL emits:
    Sig1=0, Sig2=0xFFFF, Version=1, Machine, TimeDateStamp, ClassID (LLVM's ClGlObjMagic),
    SizeOfData, Flags, MetaDataSize, MetaDataOffset — labelled hand-made, not compiler output."""
    clsid = bytes.fromhex("38feb30ca5d9ab4dac9bd6b6222653c2")
    head = struct.pack("<HHHHI", 0, 0xFFFF, 1, 0x8664, 0)
    blob = head + clsid + struct.pack("<IIII", 16, 0, 0, 0)
    f = inspect_bytes(blob + b"\0" * 16, "ltcg.obj")
    assert "msvc-ltcg" in LTO_KINDS
    assert (f.format, f.kind, f.arch, f.abi.lto) == ("coff", "object", "x86_64", "msvc-ltcg")
    assert "cl /GL" in f.evidence["lto"][0]


def test_truncated_coff_is_a_clean_error(mingw: Path, clangcl: Path) -> None:
    for path in (mingw / "w.o", mingw / "w_big.o", clangcl / "w_MD.obj"):
        data = path.read_bytes()
        for cut in (24, 60, len(data) // 2, len(data) - 3):
            with pytest.raises(FormatError, match=path.name.replace(".", r"\.")):
                inspect_bytes(data[:cut], path.name, SYMBOLS)


# ---- import libraries ---------------------------------------------------------------------------

def test_short_import_library(mingw: Path) -> None:
    f = inspect(mingw / "foo.lib", SYMBOLS)
    assert f.kind == "import-library"
    shorts = [m for m in f.members or [] if m.details.get("import_format") == "short"]
    assert [m.details["import"]["symbol"] for m in shorts] == ["foo_fn", "foo_data"]
    fn, data = shorts
    assert fn.needed == data.needed == ["foo.dll"]
    assert (fn.format, fn.kind, fn.arch) == ("coff", "import-library", "x86_64")
    assert fn.symbols is not None and data.symbols is not None
    assert fn.symbols.defined == ["__imp_foo_fn", "foo_fn"]
    assert data.symbols.defined == ["__imp_foo_data"]  # DATA exports get only __imp_
    assert data.details["import"]["type"] == "data"
    members_needed = {n for m in f.members or [] for n in m.needed or []}
    assert members_needed == {"foo.dll"}


def test_long_import_library_from_binutils(mingw: Path) -> None:
    f = inspect(mingw / "libfoo.dll.a", SYMBOLS)
    members = f.members or []
    assert members and all(m.kind == "import-library" for m in members)
    assert all(m.details["import_format"] == "long" for m in members)
    assert {n for m in members for n in m.needed or []} == {"foo.dll"}
    defined = {s for m in members for s in (m.symbols.defined if m.symbols else [])}
    assert {"foo_fn", "__imp_foo_fn", "__imp_foo_data"} <= defined


# ---- PE images ----------------------------------------------------------------------------------

def test_mingw_c_dll(mingw: Path) -> None:
    f = inspect(mingw / "w.dll", SYMBOLS)
    assert (f.format, f.kind, f.os, f.arch) == ("pe", "shared-library", "windows", "x86_64")
    assert f.details["pe"] == "PE32+"
    plain, delay = readobj_imports(mingw / "w.dll")
    assert f.needed == plain and f.delay_needed == delay == []
    assert "msvcrt.dll" in f.needed and f.details["crt"] == "msvcrt"
    assert f.abi.msvc_runtime is None  # the system msvcrt.dll is not an MSVC /MD runtime
    assert f.abi.eh is None  # an image may link EH statically: no import is no proof
    assert f.details["toolchain"] == "mingw"
    assert "rich" not in f.details
    assert f.details["linker_version"] == "2.40"
    assert f.symbols is not None
    assert f.symbols.exports == readobj_exports(mingw / "w.dll") == ["wfunc"]
    assert f.soname == "w.dll"


def test_version_resource(mingw: Path) -> None:
    """VERSIONINFO compiled by windres: FILEVERSION/PRODUCTVERSION from VS_FIXEDFILEINFO."""
    f = inspect(mingw / "wver.dll")
    assert (f.details["file_version"], f.details["product_version"]) == ("1.2.3.4", "5.6.7.8")
    assert "file_version" not in inspect(mingw / "w.dll").details


def test_mingw_cxx_dll_links_libstdcxx(mingw: Path) -> None:
    f = inspect(mingw / "wx.dll", SYMBOLS)
    assert "libstdc++-6.dll" in (f.needed or [])
    assert f.abi.cxx_stdlib == "libstdc++"
    assert f.evidence["cxx_stdlib"] == ["imports libstdc++-6.dll"]
    assert f.abi.eh == "native"
    assert f.symbols is not None
    assert sorted(f.symbols.exports) == sorted(readobj_exports(mingw / "wx.dll"))
    assert any(e.startswith("_Z5greet") for e in f.symbols.exports)


def test_mingw_static_libstdcxx_dll(mingw: Path) -> None:
    """-static-libstdc++: no libstdc++-6.dll import, the exported Itanium names still tell."""
    f = inspect(mingw / "wx_static.dll")
    assert not any("libstdc++" in d for d in f.needed or [])
    assert f.abi.cxx_stdlib == "libstdc++"
    assert f.details["toolchain"] == "mingw"


def test_i686_dll_is_pe32(mingw: Path) -> None:
    f = inspect(mingw / "w32.dll")
    assert (f.arch, f.details["pe"], f.details["machine"]) == ("i686", "PE32", "I386")
    assert "IMAGE_FILE_MACHINE_I386" in readobj(mingw / "w32.dll", "--file-headers")
    assert f.needed == all_imports(mingw / "w32.dll")


def test_zig_windows_gnu_dll_is_ucrt_llvm_mingw(zigwin: Path) -> None:
    f = inspect(zigwin / "w.dll", SYMBOLS)
    assert (f.kind, f.arch) == ("shared-library", "x86_64")
    assert f.details["toolchain"] == "llvm-mingw"
    assert f.details["crt"] == "ucrt"
    assert f.abi.msvc_runtime == "MD"  # dynamic UCRT, quoted as evidence
    assert any("api-ms-win-crt-" in e for e in f.evidence["msvc_runtime"])
    assert f.details["linker_version"] == "14.0" and "rich" not in f.details
    assert f.needed == all_imports(zigwin / "w.dll")
    assert f.symbols is not None and "wfunc" in f.symbols.exports


def test_truncated_pe_is_a_clean_error(mingw: Path) -> None:
    data = (mingw / "w.dll").read_bytes()
    for cut in (2, 0x40, 0x90, 0x200, 0x600):
        with pytest.raises(FormatError, match=r"w\.dll"):
            inspect_bytes(data[:cut], "w.dll", SYMBOLS)
    with pytest.raises(FormatError, match="without a PE header"):
        inspect_bytes(b"MZ" + b"\0" * 0x3A + struct.pack("<I", 0x40) + b"NE\0\0" + b"\0" * 64,
                      "old.exe")


@pytest.mark.parametrize("arch", ["x64", "arm64"])
def test_onnxruntime_node_win32_dll(ort_node: Path, arch: str) -> None:
    """docs/binary-formats.md §6.2, checked against llvm-readobj on the same file."""
    dll = ort_node / f"bin/napi-v6/win32/{arch}/onnxruntime.dll"
    f = inspect(dll, SYMBOLS)
    machine = {"x64": ("x86_64", "AMD64"), "arm64": ("aarch64", "ARM64")}[arch]
    assert (f.arch, f.details["machine"]) == machine
    assert (f.format, f.kind, f.os, f.details["pe"]) == ("pe", "shared-library", "windows", "PE32+")
    assert f.details["linker_version"] == "14.44"
    assert f.details["rich"]["entries"] == {"x64": 14, "arm64": 15}[arch]
    assert f.details["toolchain"] == "msvc"
    assert f.abi.msvc_runtime == "MD"
    assert f.abi.cxx_stdlib == "msvc"
    assert f.abi.eh == "native"
    assert any("__CxxFrameHandler" in e for e in f.evidence["eh"])
    plain, delay = readobj_imports(dll)
    assert f.needed == plain  # load-time imports only
    assert f.delay_needed == f.details["delay_imports"] == delay == [
        "SHELL32.dll", "DirectML.dll", "d3d12.dll", "dxgi.dll", "USER32.dll"]
    assert "VCRUNTIME140.dll" in plain and "MSVCP140.dll" in plain
    assert f.symbols is not None
    assert f.symbols.exports == readobj_exports(dll) == [
        "OrtGetApiBase", "OrtSessionOptionsAppendExecutionProviderEx_DML",
        "OrtSessionOptionsAppendExecutionProvider_CPU",
        "OrtSessionOptionsAppendExecutionProvider_DML"]
    assert f.details["pdb"] == r"N:\_work\1\b\RelWithDebInfo\RelWithDebInfo\onnxruntime.pdb"
    assert f.soname == "onnxruntime.dll"
    assert f.details["authenticode"] is True
    assert f.details["file_version"].startswith("1.30.0.")
    flags = re.findall(r"IMAGE_DLL_CHARACTERISTICS_(\w+) \(", readobj(dll, "--file-headers"))
    assert sorted(f.details["dll_characteristics"]) == sorted(
        x.lower().replace("_", "-") for x in flags) == [
        "dynamic-base", "guard-cf", "high-entropy-va", "nx-compat"]


def test_onnxruntime_binding_delay_imports_node(ort_node: Path) -> None:
    f = inspect(ort_node / "bin/napi-v6/win32/x64/onnxruntime_binding.node", SYMBOLS)
    assert f.details["delay_imports"] == f.delay_needed == ["NODE.EXE"]
    plain, delay = readobj_imports(ort_node / "bin/napi-v6/win32/x64/onnxruntime_binding.node")
    assert delay == ["NODE.EXE"] and f.needed == plain  # the addon does not "need" node.exe
    assert "onnxruntime.dll" in (f.needed or []) and "NODE.EXE" not in (f.needed or [])
    assert f.symbols is not None
    assert sorted(f.symbols.exports) == [
        "napi_register_module_v1", "node_api_module_get_api_version_v1"]


def test_directml_static_crt_reported_with_evidence(ort_node: Path) -> None:
    """DirectML.dll is MSVC-linked and imports no CRT DLL, yet imports what the static CRT needs
    (FLS, unwinder, command line): the one "MT" prebake reports for an image, with its reasons."""
    f = inspect(ort_node / "bin/napi-v6/win32/x64/DirectML.dll")
    plain, _ = readobj_imports(ort_node / "bin/napi-v6/win32/x64/DirectML.dll")
    assert not any(d.lower().startswith(("vcruntime", "msvcp", "ucrtbase", "api-ms-win-crt"))
                   for d in plain)
    assert f.abi.msvc_runtime == "MT"
    assert "FlsAlloc" in f.evidence["msvc_runtime"][0]


def test_mutated_pe_and_coff_give_only_clean_errors(mingw: Path, clangcl: Path) -> None:
    """Random byte flips in headers and tables of real files: a Facts or a FormatError."""
    rnd = random.Random(7)
    files = [mingw / "w.dll", mingw / "wver.dll", mingw / "w_big.o", mingw / "wx.o",
             mingw / "foo.lib", clangcl / "w_MD.obj", clangcl / "dm.obj"]
    for path in files:
        data = path.read_bytes()
        for _ in range(150):
            b = bytearray(data[: rnd.randrange(8, len(data))] if rnd.random() < 0.2 else data)
            for _ in range(rnd.randrange(1, 12)):
                b[rnd.randrange(min(len(b), 4096))] = rnd.randrange(256)
            with contextlib.suppress(FormatError):
                inspect_bytes(bytes(b), path.name, SYMBOLS)


MINGW_LIBS = Path("/usr/x86_64-w64-mingw32/lib/libkernel32.a")
MINGW_STDCXX = Path("/usr/lib/gcc/x86_64-w64-mingw32/12-win32/libstdc++.a")


@pytest.mark.skipif(not (MINGW_LIBS.exists() and MINGW_STDCXX.exists()),
                    reason="Debian's mingw-w64 libraries are not installed")
def test_debian_mingw_libraries() -> None:
    """Real mingw-w64 archives: binutils' long-format import library and GCC's libstdc++."""
    k32 = inspect(MINGW_LIBS)
    long_members = [m for m in k32.members or [] if m.details.get("import_format") == "long"]
    assert len(long_members) > 1000
    assert not any(m.details.get("import_format") == "short" for m in k32.members or [])
    assert {n for m in k32.members or [] for n in m.needed or []} == {"KERNEL32.dll"}
    std = inspect(MINGW_STDCXX)
    assert (std.kind, std.arch, std.abi.cxx_stdlib) == ("static-library", "x86_64", "libstdc++")
    assert {m.details.get("toolchain") for m in std.members or []} == {"mingw"}
    assert std.abi.msvc_runtime is None


def test_stale_debug_pointer_is_noted_not_fatal(zigwin: Path) -> None:
    """A CodeView entry pointing past the end (as after a careless post-link edit): the image's
    facts still come out, the problem is named in details."""
    dll = zigwin / "w.dll"
    text = readobj(dll, "--coff-debug-directory")
    size, addr, ptr = (int(re.findall(rf"{k}: (0x[0-9A-F]+)", text)[0], 16)
                       for k in ("SizeOfData", "AddressOfRawData", "PointerToRawData"))
    entry = struct.pack("<III", size, addr, ptr)
    data = dll.read_bytes()
    assert data.count(entry) == 1
    broken = data.replace(entry, struct.pack("<III", size, addr, len(data) + 64))
    f = inspect_bytes(broken, "w.dll")
    assert "pdb" not in f.details and "debug_error" in f.details
    assert f.symbols is None and f.needed == inspect(dll).needed
    assert inspect(dll).details["pdb"] == "w.pdb"


@pytest.fixture(scope="module")
def delayload() -> Path:
    """A DLL linked by lld-link that imports bar.dll at load time and delay-loads foo.dll
    (``/delayload``), against import libraries from llvm-dlltool. The delay-load helper is
    the DLL's own (``/nodefaultlib``: no MSVC libraries here), which the linker only calls."""
    src = ("int foo_fn(int); int bar_fn(int);\n"
           "__declspec(dllexport) int api(int x) { return foo_fn(x) + bar_fn(x); }\n"
           "void *__delayLoadHelper2(void *d, void **f) { (void)d; return *f; }\n")
    return support.build("pe-delayload", {
        "w.c": src, "foo.def": "LIBRARY foo.dll\nEXPORTS\nfoo_fn\n",
        "bar.def": "LIBRARY bar.dll\nEXPORTS\nbar_fn\n"}, [
        ["clang", "--target=x86_64-pc-windows-msvc", "-O1", "-c", "w.c", "-o", "w.obj"],
        ["llvm-dlltool", "-m", "i386:x86-64", "-d", "foo.def", "-l", "foo.lib"],
        ["llvm-dlltool", "-m", "i386:x86-64", "-d", "bar.def", "-l", "bar.lib"],
        ["lld-link", "/dll", "/noentry", "/nodefaultlib", "/delayload:foo.dll", "w.obj",
         "foo.lib", "bar.lib", "/out:w.dll"],
    ])


def test_delay_loaded_dlls_are_their_own_fact(delayload: Path) -> None:
    f = inspect(delayload / "w.dll", SYMBOLS)
    plain, delay = readobj_imports(delayload / "w.dll")
    assert (plain, delay) == (["bar.dll"], ["foo.dll"])  # llvm-readobj's reading
    assert f.needed == plain and f.delay_needed == delay
    assert f.symbols is not None and {"foo_fn", "bar_fn"} <= set(f.symbols.undefined)
    j = f.to_json()
    assert j["needed"] == ["bar.dll"] and j["delay_needed"] == ["foo.dll"]


def test_allowed_needed_judges_delay_loaded_dlls_too(delayload: Path, tmp_path: Path) -> None:
    """A delay-loaded DLL must be there on first call: the contract's allow-list covers it,
    and the violation says it is delay-loaded."""
    contract = tmp_path / "c.toml"
    contract.write_text('allowed_needed = ["bar.dll"]\n')
    proc = support.prebake("check", "--json", delayload / "w.dll", "--contract", contract)
    assert proc.returncode == 1, proc.stderr
    [v] = json.loads(proc.stdout)["violations"]
    assert v["rule"] == "allowed_needed" and v["found"] == "foo.dll"
    assert "delay-loads foo.dll" in v["detail"], v
    contract.write_text('allowed_needed = ["bar.dll", "foo.dll"]\n')
    proc = support.prebake("check", delayload / "w.dll", "--contract", contract)
    assert proc.returncode == 0, proc.stdout + proc.stderr
