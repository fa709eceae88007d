"""COFF objects (regular, ``/bigobj``), anonymous objects (MSVC ``/GL``), short import objects.

Spec: Microsoft "PE Format" (learn.microsoft.com/windows/win32/debug/pe-format), sections
"COFF File Header", "Section Table", "COFF Symbol Table", "The .drectve Section" and "Import
Library Format"; the ``ANON_OBJECT_HEADER*`` layouts of ``winnt.h`` and LLVM's
``BinaryFormat/COFF.h`` (``BigObjMagic``, ``ClGlObjMagic``). docs/binary-formats.md §0, §1.1
and §6.1 hold the bytes these rules were checked on. Shared helpers (machines, runtime and C++
library rules) are used by the PE image reader in ``pe.py`` too.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field
from enum import IntEnum

from prebake.inspect import producer
from prebake.inspect.binreader import Buffer, Reader, Truncated
from prebake.inspect.facts import Facts, Symbols
from prebake.inspect.reader import FormatReader, ParseOptions


class Machine(IntEnum):
    I386 = 0x014C
    ARM = 0x01C0
    THUMB = 0x01C2
    ARMNT = 0x01C4
    IA64 = 0x0200
    AMD64 = 0x8664
    ARM64 = 0xAA64
    ARM64EC = 0xA641
    ARM64X = 0xA64E
    RISCV64 = 0x5064


# machine -> prebake arch (ARM64EC/ARM64X are arm64 code: the arch a consumer must match)
MACHINE_ARCH: dict[int, str | None] = {
    Machine.I386: "i686", Machine.ARM: "arm", Machine.THUMB: "arm", Machine.ARMNT: "arm",
    Machine.AMD64: "x86_64", Machine.ARM64: "aarch64", Machine.ARM64EC: "aarch64",
    Machine.ARM64X: "aarch64", Machine.IA64: None, Machine.RISCV64: None,
}

ANON_SIG = b"\x00\x00\xff\xff"
BIGOBJ_CLSID = bytes.fromhex("c7a1bad1eebaa94baf20faf66aa4dcb8")
LTCG_CLSID = bytes.fromhex("38feb30ca5d9ab4dac9bd6b6222653c2")  # LLVM's ClGlObjMagic (cl /GL)

SECTION_HEADER = 40
SYM_SIZE = 18
SYM_SIZE_BIGOBJ = 20
MAX_SECTIONS = 0x7FFFFFFF


class Storage(IntEnum):
    EXTERNAL = 2
    STATIC = 3
    LABEL = 6
    FUNCTION = 101
    FILE = 103
    SECTION = 104
    WEAK_EXTERNAL = 105


SEC_UNDEFINED = 0
SEC_ABSOLUTE = -1
SEC_DEBUG = -2

# /DEFAULTLIB name (lower case, no ".lib") -> MSVC runtime it selects (cl /MD, /MT, …)
DEFAULTLIB_RUNTIME = {
    "msvcrt": "MD", "msvcrtd": "MDd", "libcmt": "MT", "libcmtd": "MTd",
    "vcruntime": "MD", "vcruntimed": "MDd", "libvcruntime": "MT", "libvcruntimed": "MTd",
    "ucrt": "MD", "ucrtd": "MDd", "libucrt": "MT", "libucrtd": "MTd",
    "msvcprt": "MD", "msvcprtd": "MDd", "libcpmt": "MT", "libcpmtd": "MTd",
}
# /FAILIFMISMATCH:"RuntimeLibrary=<value>" (MSVC STL / #pragma detect_mismatch)
MISMATCH_RUNTIME = {
    "MD_DynamicRelease": "MD", "MDd_DynamicDebug": "MDd",
    "MT_StaticRelease": "MT", "MTd_StaticDebug": "MTd",
}

# C++ standard library from mangled names: (substring, stdlib). First match wins.
CXX_NAME_MARKS = (
    ("St3__1", "libc++"),  # Itanium: std::__1 (libc++'s inline namespace)
    ("@__1@std@@", "libc++"),  # MSVC mangling of std::__1 (clang-cl with libc++)
    ("St7__cxx11", "libstdc++"),  # libstdc++'s new-ABI namespace
    ("@std@@", "msvc"),  # MSVC mangling of std:: without __1: the MSVC STL
)


# C++ exception-handling runtime names (MSVC and mingw/Itanium), matched after stripping the
# i386 ``_`` decoration and any ``@N`` suffix. SEH (__C_specific_handler) is C, not C++ EH.
EH_NAMES = frozenset({
    "__CxxFrameHandler3", "__CxxFrameHandler4", "_CxxThrowException", "__CxxFrameHandler",
    "__gxx_personality_seh0", "__gxx_personality_v0", "__gxx_personality_sj0",
    "_Unwind_Resume", "__cxa_throw", "__cxa_begin_catch", "__cxa_rethrow",
})


def eh_hits(names: list[str] | set[str]) -> list[str]:
    out = set()
    for n in names:
        base = n.partition("@")[0] if not n.startswith("?") else n
        if base in EH_NAMES or base[1:] in EH_NAMES:
            out.add(base if base in EH_NAMES else base[1:])
    return sorted(out)


@dataclass
class Section:
    """One COFF section header, with its long name resolved."""

    name: str
    vsize: int
    va: int
    raw_size: int
    raw_ptr: int
    flags: int


@dataclass
class RawSymbol:
    """One COFF symbol-table record, auxiliary records kept as bytes."""

    name: str
    value: int
    section: int
    storage: int
    aux: bytes


@dataclass
class Directives:
    """What ``.drectve`` says, in order."""

    raw: str = ""
    defaultlibs: list[str] = field(default_factory=list)
    mismatch: dict[str, str] = field(default_factory=dict)
    exports: list[str] = field(default_factory=list)
    gnu_style: bool = False
    msvc_style: bool = False


def machine_facts(facts: Facts, machine: int) -> None:
    facts.arch = MACHINE_ARCH.get(machine)
    try:
        facts.details["machine"] = Machine(machine).name
    except ValueError:
        facts.details["machine"] = f"{machine:#06x}"


def string_at(strtab: bytes, off: int) -> str:
    if off < 4 or off >= len(strtab):
        raise Truncated(f"name offset {off} outside the string table ({len(strtab)} bytes)")
    end = strtab.find(b"\0", off)
    return strtab[off : end if end >= 0 else len(strtab)].decode("utf-8", "replace")


_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def section_name(raw: bytes, strtab: bytes) -> str:
    """``/123`` (decimal) and ``//AAAAAA`` (base64, bigobj) point into the string table.

    A reference that does not resolve keeps its raw form: section names are labels, and the
    ones prebake acts on (``.drectve``, ``.idata$N``) are short enough to be stored inline.
    """
    name = raw.rstrip(b"\0").decode("utf-8", "replace")
    off = -1
    if name.startswith("//") and all(ch in _B64 for ch in name[2:]):
        off = 0
        for ch in name[2:]:
            off = off * 64 + _B64.index(ch)
    elif name.startswith("/") and name[1:].isdigit():
        off = int(name[1:])
    if 4 <= off < len(strtab):
        return string_at(strtab, off)
    return name


_SECTION = struct.Struct("<8sIIIIIIHHI")


def read_sections(r: Reader, off: int, count: int, strtab: bytes) -> list[Section]:
    table = r.bytes(off, count * SECTION_HEADER, "section table")
    out = []
    for raw, vsize, va, rsize, rptr, _rel, _ln, _nrel, _nln, flags in _SECTION.iter_unpack(table):
        if raw[:1] == b"/":
            name = section_name(raw, strtab)
        else:
            name = raw.rstrip(b"\0").decode("utf-8", "replace")
        out.append(Section(name, vsize, va, rsize, rptr, flags))
    return out


def read_strtab(r: Reader, symptr: int, nsyms: int, symsize: int) -> bytes:
    """The string table right after the symbol table (u32 size including itself)."""
    if symptr == 0:
        return b""
    at = symptr + nsyms * symsize
    r.check(symptr, nsyms * symsize, "symbol table")
    if at + 4 > r.size:
        return b""  # no string table at all: legal when no name is longer than 8 bytes
    size = r.u32(at)
    if size < 4:
        return b"\0\0\0\0"
    return r.bytes(at, size, "string table")


def read_symbols(r: Reader, symptr: int, nsyms: int, symsize: int,
                 strtab: bytes) -> list[RawSymbol | None]:
    """Symbol records by index (aux records are ``None`` so aux tag indexes stay valid)."""
    out: list[RawSymbol | None] = []
    if symptr == 0 or nsyms == 0:
        return out
    table = r.bytes(symptr, nsyms * symsize, "symbol table")
    fmt = struct.Struct("<8sIiHBB" if symsize == SYM_SIZE_BIGOBJ else "<8sIhHBB")
    aux_left = 0
    current: RawSymbol | None = None
    for raw, value, sec, _type, storage, naux in fmt.iter_unpack(table):
        if aux_left:
            aux_left -= 1
            out.append(None)
            if current is not None and not current.aux:  # the first aux record is all we use
                current.aux = raw + struct.pack("<I", value)
            continue
        if raw[:4] == b"\0\0\0\0":
            name = string_at(strtab, int.from_bytes(raw[4:], "little"))
        else:
            name = raw.rstrip(b"\0").decode("utf-8", "replace")
        current = RawSymbol(name, value, sec, storage, b"")
        out.append(current)
        aux_left = naux
    return out


def classify(symbols: list[RawSymbol | None]) -> Symbols:
    """defined/undefined/weak from storage class and section number.

    As ``llvm-nm`` except for weak externals: one whose fallback symbol is defined in this object
    is reported defined and weak, whatever its search type (llvm-nm prints the GNU ``NoLibrary``
    kind as ``w``, undefined), because the link always resolves it, at worst to that fallback.
    """
    sy = Symbols()
    for s in symbols:
        if s is None:
            continue
        if s.storage == Storage.EXTERNAL:
            if s.section > 0 or s.section == SEC_ABSOLUTE or (s.section == 0 and s.value):
                sy.defined.append(s.name)
            elif s.section == SEC_UNDEFINED:
                sy.undefined.append(s.name)
        elif s.storage == Storage.WEAK_EXTERNAL:
            tag = struct.unpack_from("<I", s.aux, 0)[0] if len(s.aux) >= 4 else None
            target = symbols[tag] if tag is not None and tag < len(symbols) else None
            if target is not None and target.section > 0:
                sy.defined.append(s.name)
                sy.weak.add(s.name)
            else:
                sy.undefined.append(s.name)
    sy.exports = list(sy.defined)  # COFF has no hidden visibility for object symbols
    return sy


_TOKEN = re.compile(r'(?:[^\s"]+|"[^"]*")+')


def parse_directives(text: str) -> Directives:
    """Linker directives (``/DEFAULTLIB:x``, ``-export:x``…), quotes kept together."""
    d = Directives(raw=text.lstrip("\ufeff").strip())
    for tok in _TOKEN.findall(d.raw):
        if tok[:1] not in "/-":
            continue
        opt, _, value = tok[1:].partition(":")
        opt = opt.lower()
        value = value.replace('"', "")
        if tok[0] == "/":
            d.msvc_style = True
        else:
            d.gnu_style = True
        if opt == "defaultlib":
            d.defaultlibs.append(value)
        elif opt == "failifmismatch":
            key, _, val = value.partition("=")
            d.mismatch[key] = val
        elif opt == "export":
            d.exports.append(value)
    return d


def runtime_from_directives(facts: Facts, d: Directives) -> None:
    """``/FAILIFMISMATCH:"RuntimeLibrary=…"`` first (most precise), else ``/DEFAULTLIB`` names."""
    rt = d.mismatch.get("RuntimeLibrary")
    if rt is not None and rt in MISMATCH_RUNTIME:
        facts.abi.msvc_runtime = MISMATCH_RUNTIME[rt]
        facts.note("msvc_runtime", f'.drectve /FAILIFMISMATCH:"RuntimeLibrary={rt}"')
        return
    found: dict[str, list[str]] = {}
    for lib in d.defaultlibs:
        base = lib.lower().removesuffix(".lib")
        if base in DEFAULTLIB_RUNTIME:
            found.setdefault(DEFAULTLIB_RUNTIME[base], []).append(lib)
    if len(found) == 1:
        (value, libs), = found.items()
        facts.abi.msvc_runtime = value
        facts.note("msvc_runtime", ".drectve " + " ".join(f"/DEFAULTLIB:{x}" for x in libs))
    elif found:
        facts.note("msvc_runtime", "conflicting /DEFAULTLIB runtimes: "
                   + ", ".join(f"{k} ({' '.join(v)})" for k, v in sorted(found.items())))


def cxx_from_names(names: list[str]) -> tuple[str, str] | None:
    """(stdlib, evidence) from the first mangled-name marker that appears."""
    for mark, std in CXX_NAME_MARKS:
        hits = [n for n in names if mark in n]
        if hits:
            return std, f"{len(hits)} symbol names with {mark} (e.g. {hits[0]})"
    return None


def is_cxx_name(name: str) -> bool:
    return name.startswith(("_Z", "?", "__Z"))


@dataclass
class _Header:
    """The COFF file header fields the reader uses (object or image)."""

    machine: int
    nsections: int
    symptr: int
    nsyms: int
    opt_size: int
    sections_at: int
    symsize: int
    bigobj: bool


class CoffObjectReader:
    """Regular COFF objects: no magic, so the sniff checks the machine and header sanity."""

    name = "coff"

    def sniff(self, head: bytes) -> bool:
        if len(head) < 20:
            return False
        machine, nsec, _ts, symptr, _nsyms, opt_size, _ch = struct.unpack_from("<HHIIIHH", head)
        return (machine in MACHINE_ARCH and opt_size == 0 and 0 < nsec <= 0xFEFF
                and (symptr == 0 or symptr >= 20))

    def parse(self, data: Buffer, path: str, opts: ParseOptions) -> Facts:
        r = Reader(data)
        machine, nsec, _ts, symptr, nsyms, opt_size, _ch = struct.unpack_from(
            "<HHIIIHH", r.bytes(0, 20, "COFF header"))
        hdr = _Header(machine, nsec, symptr, nsyms, opt_size, 20 + opt_size, SYM_SIZE, False)
        return parse_object(r, hdr, path, opts)


def parse_object(r: Reader, h: _Header, path: str, opts: ParseOptions) -> Facts:
    """Facts of a COFF object (regular or bigobj) once its header is known."""
    facts = Facts(path=path, format="coff", kind="object", os="windows")
    machine_facts(facts, h.machine)
    if h.bigobj:
        facts.details["bigobj"] = True
    strtab = read_strtab(r, h.symptr, h.nsyms, h.symsize)
    sections = read_sections(r, h.sections_at, h.nsections, strtab)
    syms = read_symbols(r, h.symptr, h.nsyms, h.symsize, strtab)
    sy = classify(syms)
    facts.details["section_count"] = len(sections)
    toolchain = _directive_facts(r, facts, sections)
    ident = _gcc_ident(r, sections)
    if ident:
        facts.details["compiler_ident"] = ident
        toolchain.append(("mingw", f".rdata$zzz {ident}"))
    comp = next((x for x in syms if x is not None and x.name == "@comp.id"), None)
    if comp is not None:  # cl.exe stamps its product id and build number here
        facts.details["comp_id"] = {"product": comp.value >> 16, "build": comp.value & 0xFFFF}
        toolchain.append(("msvc", f"@comp.id symbol (build {comp.value & 0xFFFF})"))
    if any(s.name == ".llvm_addrsig" for s in sections):
        facts.details["compiler"] = "clang"
    _producer(r, facts, sections, comp)
    _import_sections(r, facts, sections)
    _set_toolchain(facts, toolchain)
    _object_cxx(facts, sy)
    _object_eh(facts, sy, sections)
    facts.abi.lto = "none"
    if opts.symbols:
        facts.symbols = sy
    return facts


def _directive_facts(r: Reader, facts: Facts, sections: list[Section]) -> list[tuple[str, str]]:
    """``.drectve`` into details and the runtime; returns toolchain clues (name, reason)."""
    clues: list[tuple[str, str]] = []
    d = _directives(r, sections)
    if d is None:
        return clues
    facts.details["directives"] = d.raw[:4096]
    if d.defaultlibs:
        facts.details["defaultlibs"] = d.defaultlibs
    if d.mismatch:
        facts.details["failifmismatch"] = d.mismatch
    if d.exports:
        facts.details["dllexports"] = d.exports
    runtime_from_directives(facts, d)
    if d.msvc_style and (d.defaultlibs or d.mismatch):
        clues.append(("msvc", "/DEFAULTLIB or /FAILIFMISMATCH directives"))
    if d.gnu_style:
        clues.append(("mingw", f"GNU-style directives ({d.raw[:60]})"))
    return clues


def _object_eh(facts: Facts, sy: Symbols, sections: list[Section]) -> None:
    """``native`` from EH handler/throw/catch references or GCC landing pads, else ``none``
    (an object's symbol table lists every reference it makes)."""
    lsda = any(s.name.startswith(".gcc_except_table") for s in sections)
    if not facts.native_eh(eh_hits(sy.defined + sy.undefined),
                           ".gcc_except_table" if lsda else None):
        facts.abi.eh = "none"
        facts.note("eh", "no C++ EH handler, throw or catch references")


def _set_toolchain(facts: Facts, found: list[tuple[str, str]]) -> None:
    kinds = {k for k, _ in found}
    if len(kinds) == 1:
        facts.details["toolchain"] = kinds.pop()
    for _, why in found:
        facts.note("toolchain", why)


def _object_cxx(facts: Facts, sy: Symbols) -> None:
    ext = sy.defined + sy.undefined
    hit = cxx_from_names(ext)
    if hit is None and facts.details.get("toolchain") == "mingw":
        gnu_std = [n for n in ext if n.startswith(("_ZSt", "_ZNSt", "_ZNKSt"))]
        if gnu_std:  # mingw-w64 gcc always pairs with libstdc++
            hit = "libstdc++", f"GCC object referencing std:: ({gnu_std[0]})"
    if hit is not None:
        facts.abi.cxx_stdlib, why = hit
        facts.note("cxx_stdlib", why)
    elif not any(is_cxx_name(n) for n in ext):
        facts.abi.cxx_stdlib = "none"
        facts.note("cxx_stdlib", "no C++ symbol names")


def _directives(r: Reader, sections: list[Section]) -> Directives | None:
    for s in sections:
        if s.name == ".drectve" and s.raw_size and s.raw_ptr:
            raw = r.bytes(s.raw_ptr, s.raw_size, ".drectve")
            return parse_directives(raw.rstrip(b"\0").decode("utf-8", "replace"))
    return None


def _gcc_ident(r: Reader, sections: list[Section]) -> str | None:
    for s in sections:
        if s.name.startswith(".rdata$zzz") and s.raw_size and s.raw_ptr:
            text = r.bytes(s.raw_ptr, min(s.raw_size, 256), ".rdata$zzz")
            ident = text.split(b"\0")[0].decode("utf-8", "replace").strip()
            if ident.startswith("GCC:"):
                return ident
    return None


MAX_IDENT = 4096  # bytes of one .rdata$zzz / .comment section read
MAX_CODEVIEW = 4096  # bytes of .debug$S searched for the compile record (it comes first)
CV_SIGNATURE_C13 = 4
DEBUG_S_SYMBOLS = 0xF1
S_COMPILE3 = 0x113C


def _producer(r: Reader, facts: Facts, sections: list[Section], comp: RawSymbol | None
              ) -> None:
    """What compiled a COFF object: MinGW GCC's ``.ident`` in ``.rdata$zzz``, a ``.comment``,
    the CodeView compile record (``S_COMPILE3``: clang and zig with ``-gcodeview``, cl.exe in
    every object) and cl.exe's ``@comp.id`` build. LLVM without CodeView writes none."""
    found: list[tuple[str, str, producer.Producer | None]] = []
    for s in sections:
        if not (s.raw_size and s.raw_ptr):
            continue
        if s.name.startswith(".rdata$zzz") or s.name == ".comment":
            raw = r.bytes(s.raw_ptr, min(s.raw_size, MAX_IDENT), s.name)
            found += [(s.name, t, p) for t, p in producer.parsed(raw)]
        elif s.name == ".debug$S":
            text = _compile_record(r.bytes(s.raw_ptr, min(s.raw_size, MAX_CODEVIEW), s.name))
            if text is not None:
                found.append(("S_COMPILE3", text, producer.parse(text)))
    if comp is not None and comp.value >> 16:  # cl.exe's product id and build
        text = f"@comp.id product {comp.value >> 16} build {comp.value & 0xFFFF}"
        found.append(("symbol", text, producer.Producer("msvc", str(comp.value & 0xFFFF))))
    producer.record(facts, found, absent=(
        "no .rdata$zzz, .comment or CodeView compile record (LLVM writes none into a COFF "
        "object without -gcodeview)"))


def _compile_record(raw: bytes) -> str | None:
    """The version text of the first ``S_COMPILE3`` of a ``.debug$S`` (C13 CodeView):
    ``clang version 22.1.8``; cl.exe's ``Microsoft (R) Optimizing Compiler`` gets its
    front-end version appended (its text names none)."""
    if len(raw) < 4 or struct.unpack_from("<I", raw)[0] != CV_SIGNATURE_C13:
        return None
    at = 4
    while at + 8 <= len(raw):
        kind, size = struct.unpack_from("<II", raw, at)
        body, at = at + 8, at + 8 + ((size + 3) & ~3)
        if kind != DEBUG_S_SYMBOLS:
            continue
        pos, end = body, min(body + size, len(raw))
        while pos + 4 <= end:
            reclen, rectyp = struct.unpack_from("<HH", raw, pos)
            if reclen < 2:
                return None
            if rectyp == S_COMPILE3 and pos + 2 + reclen <= end and reclen >= 24:
                fe = struct.unpack_from("<HHH", raw, pos + 10)
                text = raw[pos + 26 : pos + 2 + reclen].split(b"\0")[0]
                name = text.decode("utf-8", "replace").strip()[: producer.MAX_TEXT]
                if not any(ch.isdigit() for ch in name):
                    name = f"{name} {fe[0]}.{fe[1]}.{fe[2]}"
                return name
            pos += 2 + reclen
        return None
    return None


def _import_sections(r: Reader, facts: Facts, sections: list[Section]) -> None:
    """binutils long-format import members: ``.idata$*`` sections; ``.idata$7`` names the DLL."""
    idata = [s for s in sections if s.name.startswith(".idata$")]
    if not idata:
        return
    facts.kind = "import-library"
    facts.details["import_format"] = "long"
    for s in idata:
        # binutils puts the DLL name in .idata$7, llvm-dlltool/lib.exe in .idata$6 of the
        # import-descriptor member; other .idata$6 blocks hold hint + function name.
        if s.name in (".idata$6", ".idata$7") and s.raw_size and s.raw_ptr:
            text = r.bytes(s.raw_ptr, min(s.raw_size, 1024), s.name)
            for part in text.split(b"\0"):
                name = part.decode("utf-8", "replace")
                if name.lower().endswith(DLL_SUFFIXES):
                    facts.needed = [name]
                    return


class AnonObjectReader:
    """``00 00 FF FF`` headers: short import objects (version 0), bigobj and ``/GL`` objects."""

    name = "coff-anon"

    def sniff(self, head: bytes) -> bool:
        return len(head) >= 8 and head[:4] == ANON_SIG

    def parse(self, data: Buffer, path: str, opts: ParseOptions) -> Facts:
        r = Reader(data)
        ver, machine = r.u16(4), r.u16(6)
        if ver == 0:
            return _short_import(r, machine, path, opts)
        clsid = r.bytes(12, 16, "anonymous object class id")
        if clsid == BIGOBJ_CLSID:
            nsec, symptr, nsyms = r.u32(44), r.u32(48), r.u32(52)
            if nsec > r.size // SECTION_HEADER:
                raise Truncated(f"bigobj declares {nsec} sections")
            h = _Header(machine, nsec, symptr, nsyms, 0, 56, SYM_SIZE_BIGOBJ, True)
            return parse_object(r, h, path, opts)
        facts = Facts(path=path, format="coff", kind="object", os="windows")
        machine_facts(facts, machine)
        facts.details["anon_object_version"] = ver
        facts.details["anon_class_id"] = clsid.hex()
        if clsid == LTCG_CLSID:
            facts.abi.lto = "msvc-ltcg"
            facts.details["toolchain"] = "msvc"
            facts.note("lto", "anonymous object with the cl /GL class id (MSVC LTCG intermediate)")
        return facts


DLL_SUFFIXES = (".dll", ".exe", ".sys", ".drv", ".ocx", ".cpl")
IMPORT_TYPES = {0: "code", 1: "data", 2: "const"}
IMPORT_NAME_TYPES = {0: "ordinal", 1: "name", 2: "noprefix", 3: "undecorate", 4: "exportas"}


def _short_import(r: Reader, machine: int, path: str, opts: ParseOptions) -> Facts:
    size, hint, typ = r.u32(12), r.u16(16), r.u16(18)
    r.check(20, size, "import object data")
    body = r.bytes(20, size, "import object data")
    parts = body.split(b"\0")
    if len(parts) < 3:
        raise Truncated("short import object lacks its symbol and DLL names")
    symbol, dll = (p.decode("utf-8", "replace") for p in parts[:2])
    facts = Facts(path=path, format="coff", kind="import-library", os="windows")
    machine_facts(facts, machine)
    facts.needed = [dll]
    itype = IMPORT_TYPES.get(typ & 3, str(typ & 3))
    facts.details["import"] = {
        "symbol": symbol, "dll": dll, "type": itype,
        "name_type": IMPORT_NAME_TYPES.get((typ >> 2) & 7, str((typ >> 2) & 7)),
        "ordinal_hint": hint,
    }
    facts.details["import_format"] = "short"
    facts.abi.lto = "none"
    hit = cxx_from_names([symbol])
    facts.abi.cxx_stdlib = hit[0] if hit else None if is_cxx_name(symbol) else "none"
    if opts.symbols:
        defined = [f"__imp_{symbol}"] + ([symbol] if itype == "code" else [])
        facts.symbols = Symbols(defined=defined, exports=list(defined))
    return facts


COFF_OBJECT = CoffObjectReader()
ANON_OBJECT = AnonObjectReader()
READERS: list[FormatReader] = [ANON_OBJECT, COFF_OBJECT]
