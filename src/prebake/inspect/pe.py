"""PE images (DLL/EXE): machine, imports, delay imports, exports, Rich header, PDB, CRT.

Spec: Microsoft "PE Format" (learn.microsoft.com/windows/win32/debug/pe-format): "MS-DOS
Stub", "Optional Header", ".edata", ".idata", "Delay-Load Import Tables", ".debug"; the Rich
header layout is undocumented by Microsoft and follows the public reverse-engineering
write-ups (XOR key after ``Rich``, ``DanS`` start marker). docs/binary-formats.md §6 lists the
facts and the real DLLs they were verified on. COFF objects and import objects live in
``coff.py``; this module's ``READERS`` puts the PE reader first and the magic-less COFF reader
last.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from prebake.errors import FormatError
from prebake.inspect import coff, magic, producer
from prebake.inspect.binreader import Buffer, Reader, Truncated
from prebake.inspect.facts import Facts, Symbols
from prebake.inspect.reader import FormatReader, ParseOptions

PE32 = 0x10B
PE32_PLUS = 0x20B
DIR_EXPORT, DIR_IMPORT, DIR_RESOURCE, DIR_SECURITY, DIR_DEBUG = 0, 1, 2, 4, 6
DIR_DELAY, DIR_CLR = 13, 14
RT_VERSION = 16
VS_FIXEDFILEINFO_SIGNATURE = b"\xbd\x04\xef\xfe"
MAX_RESOURCE_ENTRIES = 4096
# DllCharacteristics bits a release audit asks about (ASLR, DEP, CFG…)
DLL_CHARACTERISTICS = {0x20: "high-entropy-va", 0x40: "dynamic-base", 0x100: "nx-compat",
                       0x400: "no-seh", 0x4000: "guard-cf"}
DEBUG_CODEVIEW = 2
DEBUG_REPRO = 16
IMAGE_FILE_DLL = 0x2000
IMAGE_FILE_EXECUTABLE = 0x0002
DANS = 0x536E6144  # "DanS"

SUBSYSTEMS = {1: "native", 2: "windows-gui", 3: "windows-cui", 9: "windows-ce-gui",
              10: "efi-application", 11: "efi-boot-service-driver", 12: "efi-runtime-driver",
              13: "efi-rom", 14: "xbox", 16: "windows-boot-application"}
EFI_SUBSYSTEMS = {10, 11, 12, 13}

# Imported DLL (lower case) -> MSVC runtime: (prefix, runtime). Debug names first.
RUNTIME_IMPORTS = (
    ("vcruntime140d", "MDd"), ("msvcp140d", "MDd"), ("ucrtbased", "MDd"),
    ("vcruntime1", "MD"), ("msvcp1", "MD"), ("msvcr1", "MD"), ("ucrtbase.dll", "MD"),
    ("api-ms-win-crt-", "MD"),
)
# Kernel32 (or OneCore API-set) imports that the statically linked MSVC CRT brings in: fiber-local
# storage for per-thread CRT data, the static vcruntime's unwinder helpers, the CRT's command-line
# start-up. Used only with a Rich header and no CRT DLL import, to report "MT" with evidence
# (seen in onnxruntime-node's DirectML.dll, which imports no CRT DLL but all of these).
STATIC_CRT_MARKERS = ("FlsAlloc", "FlsGetValue", "RtlPcToFileHeader", "GetCommandLineA")
MIN_STATIC_CRT_MARKERS = 3
# Imported DLL (lower case) -> C++ standard library
CXX_IMPORTS = (("msvcp1", "msvc"), ("libstdc++", "libstdc++"), ("libc++", "libc++"))
MAX_IMPORT_DESCRIPTORS = 1 << 14
MAX_DEBUG_ENTRIES = 64
# Import/export table entries read per image (real DLLs have thousands; hostile ones, no end).
MAX_TABLE_ENTRIES = 1 << 20


@dataclass
class _Image:
    """A PE image's headers, sections and data directories, read once per file."""

    r: Reader
    pe32plus: bool
    image_base: int
    size_of_headers: int
    sections: list[coff.Section]
    dirs: list[tuple[int, int]]
    budget: int  # table entries left to read: bounds work by the file size, not by headers
    imports: list[tuple[str, list[str]]] = field(default_factory=list)
    delay: list[tuple[str, list[str]]] = field(default_factory=list)

    def off(self, rva: int, what: str) -> int:
        """File offset of an RVA (docs/binary-formats.md §6: VA <= rva < VA + max(VirtualSize,
        RawSize))."""
        if rva < self.size_of_headers:
            return rva
        for s in self.sections:
            if s.va <= rva < s.va + max(s.vsize, s.raw_size):
                delta = rva - s.va
                if delta >= s.raw_size:
                    raise Truncated(f"{what} at RVA {rva:#x} is in uninitialised {s.name} data")
                return s.raw_ptr + delta
        raise Truncated(f"{what} at RVA {rva:#x} is in no section")

    def cstr(self, rva: int, what: str) -> str:
        return self.r.cstr(self.off(rva, what), limit=4096)

    def dir(self, index: int) -> tuple[int, int]:
        return self.dirs[index] if index < len(self.dirs) else (0, 0)

    def spend(self, n: int = 1) -> None:
        self.budget -= n
        if self.budget < 0:
            raise Truncated("more table entries than the file can hold")


class PeReader:
    """``MZ`` + ``PE\\0\\0`` images."""

    name = "pe"

    def sniff(self, head: bytes) -> bool:
        return head[:2] == magic.PE

    def parse(self, data: Buffer, path: str, opts: ParseOptions) -> Facts:
        r = Reader(data)
        lfanew = r.u32(0x3C)
        if r.size < lfanew + 4 or r.bytes(lfanew, 4, "PE signature") != b"PE\0\0":
            raise FormatError(path, "an MZ (DOS) executable without a PE header")
        machine, nsec, _ts, symptr, nsyms, opt_size, chars = struct.unpack_from(
            "<HHIIIHH", r.bytes(lfanew + 4, 20, "COFF header"))
        opt = lfanew + 24
        img = _optional_header(r, opt, opt_size, nsec, symptr, nsyms)
        facts = Facts(path=path, format="pe", os="windows")
        coff.machine_facts(facts, machine)
        facts.kind = ("shared-library" if chars & IMAGE_FILE_DLL
                      else "executable" if chars & IMAGE_FILE_EXECUTABLE else None)
        _header_details(r, facts, opt, img)
        if facts.details.get("subsystem_id") in EFI_SUBSYSTEMS:
            facts.os = None  # firmware image, not a Windows program
        _read_imports(img)
        _read_delay_imports(img)
        exports = _read_exports(img, facts)
        # load-time imports and delay-loaded DLLs apart: a node addon delay-loads NODE.EXE
        # (the host that loads it), which it does not "need" as a library
        facts.needed = list(dict.fromkeys(dll for dll, _ in img.imports))
        facts.delay_needed = list(dict.fromkeys(dll for dll, _ in img.delay))
        if img.delay:
            facts.details["delay_imports"] = [d for d, _ in img.delay]
        _optional(facts, "debug", lambda: _read_debug(img, facts))
        _optional(facts, "version", lambda: _read_version(img, facts))
        if img.dir(DIR_SECURITY)[1]:
            facts.details["authenticode"] = True  # a signature blob is attached (not verified)
        if img.dir(DIR_CLR)[0]:
            facts.details["dotnet"] = True  # a CLR header: managed code, not native ABI facts
        rich = _rich(r, lfanew)
        if rich is not None:
            facts.details["rich"] = rich
        _toolchain(facts, img, rich is not None)
        _producer(facts, img, rich)
        _runtime(facts, img, rich is not None)
        _cxx(facts, img, exports)
        facts.abi.lto = "none"
        hits = coff.eh_hits([n for _, names in img.imports + img.delay for n in names])
        if hits:  # statically linked EH leaves no import: unknown then, never "none"
            facts.abi.eh = "native"
            facts.note("eh", "imports " + ", ".join(hits))
        if opts.symbols:
            undefined = [n for _, names in img.imports + img.delay for n in names]
            facts.symbols = Symbols(defined=list(exports), undefined=undefined,
                                    exports=list(exports))
        return facts


def _optional(facts: Facts, what: str, read: Callable[[], None]) -> None:
    """Debug and resource data only add details: a broken one is noted, not fatal (linkers
    and signing tools leave stale debug pointers in otherwise good images)."""
    try:
        read()
    except Truncated as exc:
        facts.details[f"{what}_error"] = str(exc)


def _optional_header(r: Reader, opt: int, opt_size: int, nsec: int, symptr: int,
                     nsyms: int) -> _Image:
    magic = r.u16(opt)
    if magic not in (PE32, PE32_PLUS):
        raise Truncated(f"optional header magic {magic:#x} is neither PE32 nor PE32+")
    plus = magic == PE32_PLUS
    r.check(opt, opt_size, "optional header")
    image_base = r.u64(opt + 24) if plus else r.u32(opt + 28)
    size_of_headers = r.u32(opt + 60)
    ndirs_at = opt + (108 if plus else 92)
    ndirs = min(r.u32(ndirs_at), 16, max(0, (opt + opt_size - ndirs_at - 4) // 8))
    dirs = [(r.u32(ndirs_at + 4 + 8 * i), r.u32(ndirs_at + 8 + 8 * i)) for i in range(ndirs)]
    strtab = b""
    if symptr:  # only GNU ld keeps a COFF symbol table (for long section names); optional
        try:
            strtab = coff.read_strtab(r, symptr, nsyms, coff.SYM_SIZE)
        except Truncated:
            strtab = b""
    sections = coff.read_sections(r, opt + opt_size, nsec, strtab)
    budget = min(r.size // 4, MAX_TABLE_ENTRIES)
    return _Image(r, plus, image_base, size_of_headers, sections, dirs, budget=budget)


def _header_details(r: Reader, facts: Facts, opt: int, img: _Image) -> None:
    sub = r.u16(opt + 68)
    dllchars = r.u16(opt + 70)
    facts.details.update({
        "pe": "PE32+" if img.pe32plus else "PE32",
        "linker_version": f"{r.u8(opt + 2)}.{r.u8(opt + 3)}",
        "os_version": f"{r.u16(opt + 40)}.{r.u16(opt + 42)}",
        "subsystem_version": f"{r.u16(opt + 48)}.{r.u16(opt + 50)}",
        "subsystem": SUBSYSTEMS.get(sub, str(sub)),
        "subsystem_id": sub,
        "dll_characteristics": [n for bit, n in DLL_CHARACTERISTICS.items() if dllchars & bit],
        "sections": [s.name for s in img.sections],
    })


def _thunk_names(img: _Image, rva: int, dll: str) -> list[str]:
    """Function names of one import lookup table (ordinal imports are skipped)."""
    names: list[str] = []
    if rva == 0:
        return names
    width = 8 if img.pe32plus else 4
    at = img.off(rva, f"import table of {dll}")
    flag = 1 << (width * 8 - 1)
    while True:
        img.spend()
        entry = img.r.u64(at) if width == 8 else img.r.u32(at)
        if entry == 0:
            return names
        if not entry & flag:
            names.append(img.cstr((entry & 0x7FFFFFFF) + 2, f"import name of {dll}"))
        at += width


def _read_imports(img: _Image) -> None:
    rva, size = img.dir(DIR_IMPORT)
    if not rva or not size:
        return
    at = img.off(rva, "import directory")
    for _ in range(MAX_IMPORT_DESCRIPTORS):
        img.spend(5)
        oft, _ts, _fwd, name_rva, ft = struct.unpack_from(
            "<IIIII", img.r.bytes(at, 20, "import descriptor"))
        if name_rva == 0:
            return
        dll = img.cstr(name_rva, "imported DLL name")
        img.imports.append((dll, _thunk_names(img, oft or ft, dll)))
        at += 20


def _read_delay_imports(img: _Image) -> None:
    rva, size = img.dir(DIR_DELAY)
    if not rva or not size:
        return
    at = img.off(rva, "delay import directory")
    for _ in range(MAX_IMPORT_DESCRIPTORS):
        img.spend(8)
        attrs, name_rva, _h, _iat, int_rva = struct.unpack_from(
            "<IIIII", img.r.bytes(at, 20, "delay import descriptor"))
        if name_rva == 0:
            return
        if not attrs & 1 and name_rva >= img.image_base:  # VC6-style: VAs, not RVAs
            name_rva -= img.image_base
            int_rva = int_rva - img.image_base if int_rva >= img.image_base else 0
        dll = img.cstr(name_rva, "delay-imported DLL name")
        img.delay.append((dll, _thunk_names(img, int_rva, dll)))
        at += 32


def _read_exports(img: _Image, facts: Facts) -> list[str]:
    rva, size = img.dir(DIR_EXPORT)
    if not rva or not size:
        return []
    at = img.off(rva, "export directory")
    name_rva, _base, nfuncs, nnames, funcs, names, _ords = struct.unpack_from(
        "<IIIIIII", img.r.bytes(at + 12, 28, "export directory"))
    if name_rva:
        facts.soname = img.cstr(name_rva, "DLL name")
    img.spend(nnames)
    table = img.r.bytes(img.off(names, "export name table"), nnames * 4, "export name table")
    out = [img.cstr(n, "export name") for (n,) in struct.iter_unpack("<I", table)]
    facts.details["export_count"] = nfuncs
    if nfuncs > nnames:
        facts.details["exports_by_ordinal_only"] = nfuncs - nnames
    if funcs and nfuncs:
        img.spend(nfuncs)
        fts = img.r.bytes(img.off(funcs, "export address table"), nfuncs * 4, "export addresses")
        fwd = sum(1 for (f,) in struct.iter_unpack("<I", fts) if rva <= f < rva + size)
        if fwd:
            facts.details["forwarded_exports"] = fwd
    return out


def _read_debug(img: _Image, facts: Facts) -> None:
    rva, size = img.dir(DIR_DEBUG)
    if not rva or not size:
        return
    at = img.off(rva, "debug directory")
    for i in range(min(size // 28, MAX_DEBUG_ENTRIES)):
        typ, dsize, _addr, ptr = struct.unpack_from(
            "<IIII", img.r.bytes(at + 28 * i + 12, 16, "debug directory entry"))
        if typ == DEBUG_REPRO:
            facts.details["reproducible"] = True
        if typ != DEBUG_CODEVIEW or dsize < 24 or not ptr:
            continue
        if img.r.bytes(ptr, 4, "CodeView record") == b"RSDS":
            guid = img.r.bytes(ptr + 4, 16, "PDB GUID")
            facts.details["pdb"] = img.r.cstr(ptr + 24, limit=min(dsize - 24, 4096))
            facts.details["pdb_guid"] = guid.hex()
            facts.details["pdb_age"] = img.r.u32(ptr + 20)


def _first_resource(img: _Image, base: int, rel: int, want: int | None) -> tuple[int, bool] | None:
    """The entry with id ``want`` (or the first one) of the resource directory at ``rel``:
    (offset relative to the resource root, is a subdirectory)."""
    at = base + rel
    named, ids = img.r.u16(at + 12), img.r.u16(at + 14)
    for i in range(min(named + ids, MAX_RESOURCE_ENTRIES)):
        name, off = img.r.u32(at + 16 + 8 * i), img.r.u32(at + 20 + 8 * i)
        if want is None or (not name & 0x80000000 and name == want):
            return off & 0x7FFFFFFF, bool(off & 0x80000000)
    return None


def _read_version(img: _Image, facts: Facts) -> None:
    """FileVersion/ProductVersion from the RT_VERSION resource's VS_FIXEDFILEINFO."""
    rva, size = img.dir(DIR_RESOURCE)
    if not rva or not size:
        return
    base = img.off(rva, "resource directory")
    found = _first_resource(img, base, 0, RT_VERSION)
    for _level in range(2):  # name, then language
        if found is None or not found[1]:
            return
        found = _first_resource(img, base, found[0], None)
    if found is None or found[1]:
        return
    data_rva, data_size = img.r.u32(base + found[0]), img.r.u32(base + found[0] + 4)
    blob = img.r.bytes(img.off(data_rva, "version resource"), min(data_size, 4096), "version")
    at = blob.find(VS_FIXEDFILEINFO_SIGNATURE)
    if at < 0 or at + 24 > len(blob):
        return
    fms, fls, pms, pls = struct.unpack_from("<IIII", blob, at + 8)
    facts.details["file_version"] = f"{fms >> 16}.{fms & 0xFFFF}.{fls >> 16}.{fls & 0xFFFF}"
    facts.details["product_version"] = f"{pms >> 16}.{pms & 0xFFFF}.{pls >> 16}.{pls & 0xFFFF}"


def _rich(r: Reader, lfanew: int) -> dict[str, Any] | None:
    """The XOR-masked ``DanS … Rich`` block link.exe writes between the DOS stub and ``PE``."""
    if lfanew <= 0x80 or lfanew > 0x10000:
        return None
    stub = r.bytes(0x80, lfanew - 0x80, "DOS stub")
    end = stub.rfind(b"Rich")
    if end < 0 or end + 8 > len(stub) or end % 4:
        return None
    key = struct.unpack_from("<I", stub, end + 4)[0]
    words = [w ^ key for (w,) in struct.iter_unpack("<I", stub[:end])]
    try:
        start = words.index(DANS)
    except ValueError:
        return None
    pairs = words[start + 4 :]
    entries = [(pairs[i], pairs[i + 1]) for i in range(0, len(pairs) - 1, 2)]
    builds = [comp & 0xFFFF for comp, _count in entries]
    return {"entries": len(entries), "max_build": max(builds) if builds else None}


GCC_IDENT = b"GCC: ("
MAX_IDENT_HITS = 1 << 16  # idents looked at in one image (one per object it linked)


def _producer(facts: Facts, img: _Image, rich: dict[str, Any] | None) -> None:
    """What compiled an image's code. GNU ld puts every object's ``.rdata$zzz`` (MinGW
    GCC's ``.ident``, 16-aligned) at the end of ``.rdata``: one per object linked, the
    mingw-w64 runtime's among them. link.exe's Rich header lists the builds of the tools
    whose output it linked. lld keeps neither (LLVM's COFF objects carry none)."""
    found: list[tuple[str, str, producer.Producer | None]] = []
    counts: dict[str, int] = {}
    for s in img.sections:
        if s.name != ".rdata" or not s.raw_size:
            continue
        raw = img.r.bytes(s.raw_ptr, min(s.raw_size, max(0, img.r.size - s.raw_ptr)), ".rdata")
        at, seen = raw.find(GCC_IDENT), 0
        while at >= 0 and seen < MAX_IDENT_HITS:
            seen += 1
            if at % 16 == 0 and (at == 0 or raw[at - 1] == 0):
                stop = raw.find(b"\0", at, at + producer.MAX_TEXT)
                text = raw[at : stop if stop >= 0 else at + producer.MAX_TEXT]
                ident = text.decode("utf-8", "replace")
                counts[ident] = counts.get(ident, 0) + 1
            at = raw.find(GCC_IDENT, at + 1)
    for ident, n in list(counts.items())[: producer.MAX_TEXTS]:
        found.append((f".rdata (x{n})", ident, producer.parse(ident)))
    if rich is not None and rich.get("max_build"):
        build = str(rich["max_build"])
        found.append(("Rich header", f"{rich['entries']} entries, highest build {build}",
                      producer.Producer("msvc", build)))
    producer.record(facts, found, absent=(
        "no GCC .ident in .rdata and no Rich header (an lld-linked image: LLVM's COFF "
        "objects carry no producer record)"))


def _lower_imports(img: _Image) -> list[str]:
    return [d.lower() for d, _ in img.imports + img.delay]


def _toolchain(facts: Facts, img: _Image, rich: bool) -> None:
    """msvc / mingw / llvm-mingw, from what each linker and CRT leaves behind
    (docs/binary-formats.md §6.1)."""
    dlls = _lower_imports(img)
    linker = facts.details["linker_version"]
    major = int(linker.split(".")[0])
    vc = [d for d in dlls if d.startswith(("vcruntime", "msvcp1", "msvcr1"))]
    found: tuple[str, str] | None = None
    if rich:
        found = "msvc", "Rich header (written only by MSVC link.exe)"
    elif major < 5:
        found = "mingw", f"linker version {linker} (GNU ld)"
    elif vc:
        found = "msvc", f"imports {vc[0]} (lld-link with the MSVC runtime)"
    elif any(d.startswith(("libc++", "libunwind")) for d in dlls):
        found = "llvm-mingw", "imports libc++/libunwind DLLs"
    elif any(d.startswith(("api-ms-win-crt-", "ucrtbase", "msvcrt.dll")) for d in dlls):
        found = "llvm-mingw", (f"linker version {linker} (lld), no Rich header, C runtime "
                               "without VCRUNTIME (mingw-w64 CRT)")
    if found is not None:
        facts.details["toolchain"] = found[0]
        facts.note("toolchain", found[1])
    if "msvcrt.dll" in dlls:
        facts.details["crt"] = "msvcrt"
    elif any(d.startswith(("api-ms-win-crt-", "ucrtbase")) for d in dlls):
        facts.details["crt"] = "ucrt"


def _runtime(facts: Facts, img: _Image, rich: bool) -> None:
    dlls = [d for d, _ in img.imports + img.delay]
    for prefix, value in RUNTIME_IMPORTS:
        hits = [d for d in dlls if d.lower().startswith(prefix)]
        if hits:
            facts.abi.msvc_runtime = value
            facts.note("msvc_runtime", "imports " + ", ".join(hits[:4]))
            return
    if not rich:
        return
    kernel = {n for d, names in img.imports
              if d.lower() == "kernel32.dll" or d.lower().startswith("api-ms-win-core-")
              for n in names}
    markers = [m for m in STATIC_CRT_MARKERS if m in kernel]
    if len(markers) >= MIN_STATIC_CRT_MARKERS:
        facts.abi.msvc_runtime = "MT"
        facts.note("msvc_runtime", "MSVC-linked (Rich header), no CRT DLL import, KERNEL32 "
                   f"imports of the static CRT: {', '.join(markers)} (/MTd looks the same)")


def _cxx(facts: Facts, img: _Image, exports: list[str]) -> None:
    for d in [d for d, _ in img.imports + img.delay]:
        for prefix, std in CXX_IMPORTS:
            if d.lower().startswith(prefix):
                facts.abi.cxx_stdlib = std
                facts.note("cxx_stdlib", f"imports {d}")
                return
    names = exports + [n for _, ns in img.imports + img.delay for n in ns]
    hit = coff.cxx_from_names(names)
    if hit is None and facts.details.get("toolchain") == "mingw":
        itanium = [n for n in exports if n.startswith("_Z")]
        if itanium:  # GNU ld + Itanium C++ names: mingw-w64 gcc, whose C++ library is libstdc++
            hit = "libstdc++", f"mingw (GNU ld) image exporting Itanium C++ names ({itanium[0]})"
    if hit is not None:
        facts.abi.cxx_stdlib, why = hit
        facts.note("cxx_stdlib", why)


PE = PeReader()
READERS: list[FormatReader] = [PE, *coff.READERS]
