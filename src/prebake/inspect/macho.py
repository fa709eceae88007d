"""Mach-O reader: thin images/objects and fat (universal) files.

Spec: Apple's ``<mach-o/loader.h>``, ``<mach-o/nlist.h>`` and ``<mach-o/fat.h>`` (cctools/xnu).
docs/binary-formats.md §5 lists the fields used and the bytes they were verified on. Everything goes
through the bounds-checked ``Reader``; counts taken from headers are checked against the
buffer before a table is read, so a hostile ``ncmds``/``nsyms`` cannot allocate or loop.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from prebake.errors import FormatError
from prebake.inspect import magic, producer
from prebake.inspect.archive import summarise
from prebake.inspect.binreader import Buffer, Reader, Truncated
from prebake.inspect.dispatch import inspect_bytes
from prebake.inspect.facts import Facts, Symbols
from prebake.inspect.reader import FormatReader, ParseOptions

MH_MAGIC = 0xFEEDFACE
MH_MAGIC_64 = 0xFEEDFACF
FAT_MAGIC = 0xCAFEBABE
FAT_MAGIC_64 = 0xCAFEBABF
# A Java class file starts with CAFEBABE too, then u16 minor, u16 major (>= 45): read as one
# big-endian u32 that is >= 45, while real fat files hold a handful of slices
# (docs/binary-formats.md §0).
JAVA_MIN_MAJOR = 45


class Cmd(IntEnum):
    """Load commands prebake reads (``loader.h``)."""

    SEGMENT = 0x1
    SYMTAB = 0x2
    LOAD_DYLIB = 0xC
    ID_DYLIB = 0xD
    UUID = 0x1B
    LAZY_LOAD_DYLIB = 0x20
    DYLD_INFO = 0x22
    VERSION_MIN_MACOSX = 0x24
    VERSION_MIN_IPHONEOS = 0x25
    LINKER_OPTION = 0x2D
    VERSION_MIN_TVOS = 0x2F
    VERSION_MIN_WATCHOS = 0x30
    BUILD_VERSION = 0x32
    LOAD_WEAK_DYLIB = 0x80000018
    SEGMENT_64 = 0x19
    RPATH = 0x8000001C
    REEXPORT_DYLIB = 0x8000001F
    DYLD_INFO_ONLY = 0x80000022
    LOAD_UPWARD_DYLIB = 0x80000023
    CODE_SIGNATURE = 0x1D
    DYLD_EXPORTS_TRIE = 0x80000033


# cputype -> (prebake arch or None, Apple's name)
CPU_TYPES: dict[int, tuple[str | None, str]] = {
    0x01000007: ("x86_64", "x86_64"),
    0x0100000C: ("aarch64", "arm64"),
    0x0200000C: (None, "arm64_32"),
    7: ("i686", "i386"),
    12: ("arm", "arm"),
    18: (None, "ppc"),
    0x01000012: (None, "ppc64"),
}
ARM64_SUBTYPES = {0: "arm64", 1: "arm64v8", 2: "arm64e"}
X86_64_SUBTYPES = {3: "x86_64", 8: "x86_64h"}

FILE_TYPES: dict[int, tuple[str | None, str]] = {
    1: ("object", "object"),
    2: ("executable", "execute"),
    4: (None, "core"),
    5: (None, "preload"),
    6: ("shared-library", "dylib"),
    7: (None, "dylinker"),
    8: ("shared-library", "bundle"),  # a loadable plugin (e.g. a node addon), dlopen()ed
    9: (None, "dylib_stub"),
    10: (None, "dsym"),
    11: (None, "kext_bundle"),
}

PLATFORMS = {
    1: "macos", 2: "ios", 3: "tvos", 4: "watchos", 5: "bridgeos", 6: "maccatalyst",
    7: "ios-simulator", 8: "tvos-simulator", 9: "watchos-simulator", 10: "driverkit",
    11: "visionos", 12: "visionos-simulator",
}
VERSION_MIN_PLATFORM: dict[int, str] = {
    Cmd.VERSION_MIN_MACOSX: "macos", Cmd.VERSION_MIN_IPHONEOS: "ios",
    Cmd.VERSION_MIN_TVOS: "tvos", Cmd.VERSION_MIN_WATCHOS: "watchos",
}
TOOLS = {1: "clang", 2: "swift", 3: "ld", 4: "lld"}
DYLIB_CMDS: dict[int, str] = {
    Cmd.LOAD_DYLIB: "load", Cmd.LOAD_WEAK_DYLIB: "weak", Cmd.REEXPORT_DYLIB: "reexport",
    Cmd.LAZY_LOAD_DYLIB: "lazy", Cmd.LOAD_UPWARD_DYLIB: "upward",
}

# Smallest valid cmdsize of each command read (loader.h struct sizes), so fields are never
# read from the next command's bytes.
MIN_CMD_SIZE: dict[int, int] = {
    Cmd.BUILD_VERSION: 24, Cmd.VERSION_MIN_MACOSX: 16, Cmd.VERSION_MIN_IPHONEOS: 16,
    Cmd.VERSION_MIN_TVOS: 16, Cmd.VERSION_MIN_WATCHOS: 16, Cmd.ID_DYLIB: 24,
    Cmd.LOAD_DYLIB: 24, Cmd.LOAD_WEAK_DYLIB: 24, Cmd.REEXPORT_DYLIB: 24,
    Cmd.LAZY_LOAD_DYLIB: 24, Cmd.LOAD_UPWARD_DYLIB: 24, Cmd.RPATH: 12, Cmd.UUID: 24,
    Cmd.SYMTAB: 24, Cmd.DYLD_EXPORTS_TRIE: 16, Cmd.DYLD_INFO: 48, Cmd.DYLD_INFO_ONLY: 48,
    Cmd.LINKER_OPTION: 12,
}

# nlist n_type bits
N_STAB = 0xE0
N_PEXT = 0x10
N_TYPE = 0x0E
N_EXT = 0x01
N_UNDF = 0x0
N_ABS = 0x2
N_INDR = 0xA
N_SECT = 0xE
N_WEAK_DEF = 0x0080

# C++ standard library evidence: (needed-library substring or symbol substring, stdlib)
CXX_LIBS = (("libc++.1.dylib", "libc++"), ("libc++.dylib", "libc++"),
            ("libstdc++.6.dylib", "libstdc++"), ("libstdc++.dylib", "libstdc++"))
CXX_SYMBOL_MARKS: tuple[tuple[bytes, str], ...] = (
    (b"St3__1", "libc++"), (b"St7__cxx11", "libstdc++"),
)

# Itanium C++ EH runtime names as stored (with the Mach-O ``_`` prefix): referenced or defined,
# they mean the binary throws/catches (same rule as the ELF reader's EH_MARKERS).
EH_MARKERS = tuple(b"\0_" + n + b"\0" for n in (
    b"__gxx_personality_v0", b"__gcc_personality_v0", b"_Unwind_Resume", b"__cxa_throw",
    b"__cxa_begin_catch", b"__cxa_rethrow"))

MAX_LOAD_COMMANDS = 1 << 16
MAX_FAT_SLICES = 64
MAX_TRIE_NODES = 1 << 22


def version(v: int, full: bool = False) -> str:
    """``xxxx.yy.zz`` packed version -> ``"14.0"``/``"10.13.4"`` (``full`` keeps a ``.0`` patch)."""
    major, minor, patch = v >> 16, (v >> 8) & 0xFF, v & 0xFF
    return f"{major}.{minor}.{patch}" if patch or full else f"{major}.{minor}"


def cpu_name(cputype: int, subtype: int) -> str:
    """Apple's arch name for a cputype/subtype pair (``arm64e``, ``x86_64h``)."""
    sub = subtype & 0x00FFFFFF
    if cputype == 0x0100000C:
        return ARM64_SUBTYPES.get(sub, f"arm64-sub{sub}")
    if cputype == 0x01000007:
        return X86_64_SUBTYPES.get(sub, "x86_64")
    return CPU_TYPES.get(cputype, (None, f"cpu{cputype:#x}"))[1]


@dataclass
class _Thin:
    """What one walk over the load commands collects."""

    platform: str | None = None
    minos: str | None = None
    sdk: str | None = None
    version_source: str | None = None
    soname: str | None = None
    dylibs: list[tuple[str, str]] = field(default_factory=list)  # (how, path)
    rpaths: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    symtab: tuple[int, int, int, int] | None = None  # symoff, nsyms, stroff, strsize
    trie: tuple[int, int] | None = None  # export trie (offset, size)


class MachOReader:
    """Thin Mach-O, either byte order (little-endian for every platform Apple ships today)."""

    name = "macho"

    def sniff(self, head: bytes) -> bool:
        return head[:4] in magic.MACHO

    def parse(self, data: Buffer, path: str, opts: ParseOptions) -> Facts:
        le = struct.unpack_from("<I", bytes(data[:4]))[0] in (MH_MAGIC, MH_MAGIC_64)
        r = Reader(data, le=le)
        is64 = r.u32(0) == MH_MAGIC_64
        cputype, subtype, filetype = r.u32(4), r.u32(8), r.u32(12)
        ncmds, sizeofcmds, flags = r.u32(16), r.u32(20), r.u32(24)
        hdr = 32 if is64 else 28
        r.check(hdr, sizeofcmds, "load commands")
        if ncmds > MAX_LOAD_COMMANDS or ncmds * 8 > sizeofcmds:
            raise Truncated(f"{ncmds} load commands cannot fit in {sizeofcmds} bytes")

        facts = Facts(path=path, format="macho")
        arch, _ = CPU_TYPES.get(cputype, (None, ""))
        facts.arch = arch
        kind, ftname = FILE_TYPES.get(filetype, (None, f"filetype{filetype}"))
        facts.kind = kind
        facts.details.update({
            "cpu": cpu_name(cputype, subtype),
            "cputype": cputype,
            "cpusubtype": subtype & 0x00FFFFFF,
            "filetype": ftname,
            "flags": flags,
            "byte_order": "little" if le else "big",
        })
        if subtype >> 24:
            facts.details["cpusubtype_caps"] = subtype >> 24

        thin = _walk_commands(r, hdr, ncmds, sizeofcmds)
        _apply_platform(facts, thin)
        facts.soname = thin.soname
        facts.details.update(thin.details)
        _producer(facts, thin)
        if thin.rpaths:
            facts.details["rpaths"] = thin.rpaths
        if kind != "object":
            facts.needed = [p for _, p in thin.dylibs]
            for how in ("weak", "reexport", "lazy", "upward"):
                group = [p for h, p in thin.dylibs if h == how]
                if group:
                    facts.details[f"{how}_dylibs"] = group

        strtab = b""
        if thin.symtab is not None:
            symoff, nsyms, stroff, strsize = thin.symtab
            strtab = r.bytes(stroff, strsize, "string table")
            if opts.symbols:
                facts.symbols = _symbols(r, symoff, nsyms, strtab, is64, thin.trie, kind)
        not_stripped = functools.cache(lambda: _has_locals(r, thin.symtab, is64))
        _cxx_stdlib(facts, thin, strtab, not_stripped)
        lsda = b"__gcc_except_tab" in r.bytes(hdr, sizeofcmds, "load commands")
        _eh(facts, strtab, lsda, not_stripped)
        facts.abi.lto = "none"  # native code (LTO inputs for Apple targets are bitcode files)
        return facts


_TOOL_ROLES = {"clang": True, "swift": True, "ld": False, "lld": False}  # compiler?


def _producer(facts: Facts, thin: _Thin) -> None:
    """The tools ``LC_BUILD_VERSION`` names (a linker records itself, and a compiler that
    says so: clang and swift); clang writes none into an object (ntools 0)."""
    tools: dict[str, str] = thin.details.get("build_tools") or {}
    found = [(f"LC_BUILD_VERSION tool {name}", f"{name} {ver}",
              producer.Producer(name, ver, _TOOL_ROLES[name]) if name in _TOOL_ROLES
              else None)
             for name, ver in tools.items()]
    producer.record(facts, found, absent=(
        "LC_BUILD_VERSION names no tool (clang records none in an object)"
        if thin.version_source == "LC_BUILD_VERSION"
        else "no LC_BUILD_VERSION: no tool is recorded"))


def _walk_commands(r: Reader, hdr: int, ncmds: int, sizeofcmds: int) -> _Thin:
    thin = _Thin()
    off, end = hdr, hdr + sizeofcmds
    for i in range(ncmds):
        cmd, size = r.u32(off), r.u32(off + 4)
        if size < 8 or off + size > end:
            raise Truncated(f"load command {i} (cmd {cmd:#x}) has size {size} past the commands")
        need = MIN_CMD_SIZE.get(cmd, 8)
        if size < need:
            raise Truncated(f"load command {i} (cmd {cmd:#x}) is {size} bytes, needs {need}")
        _one_command(r, thin, cmd, off, size)
        off += size
    return thin


def _lc_str(r: Reader, cmd_off: int, size: int, field_off: int) -> str:
    """An ``lc_str`` (offset from the command start) that must stay inside its command."""
    at = r.u32(cmd_off + field_off)
    if at < 8 or at >= size:
        raise Truncated(f"load command string offset {at} outside its command ({size} bytes)")
    return r.cstr(cmd_off + at, limit=size - at)


def _one_command(r: Reader, thin: _Thin, cmd: int, off: int, size: int) -> None:
    if cmd == Cmd.BUILD_VERSION:
        platform, minos = r.u32(off + 8), r.u32(off + 12)
        sdk, ntools = r.u32(off + 16), r.u32(off + 20)
        if 24 + ntools * 8 > size:
            raise Truncated(f"LC_BUILD_VERSION declares {ntools} tools in {size} bytes")
        tools = {TOOLS.get(r.u32(off + 24 + 8 * k), str(r.u32(off + 24 + 8 * k))):
                 version(r.u32(off + 28 + 8 * k)) for k in range(ntools)}
        _set_version(thin, PLATFORMS.get(platform, f"platform{platform}"), minos, sdk,
                     "LC_BUILD_VERSION")
        if tools:
            thin.details["build_tools"] = tools
    elif cmd in VERSION_MIN_PLATFORM:
        _set_version(thin, VERSION_MIN_PLATFORM[cmd], r.u32(off + 8), r.u32(off + 12),
                     f"LC_{Cmd(cmd).name}")
    elif cmd == Cmd.ID_DYLIB:
        thin.soname = _lc_str(r, off, size, 8)
        thin.details["current_version"] = version(r.u32(off + 16), full=True)
        thin.details["compatibility_version"] = version(r.u32(off + 20), full=True)
    elif cmd in DYLIB_CMDS:
        thin.dylibs.append((DYLIB_CMDS[cmd], _lc_str(r, off, size, 8)))
    elif cmd == Cmd.RPATH:
        thin.rpaths.append(_lc_str(r, off, size, 8))
    elif cmd == Cmd.CODE_SIGNATURE:
        thin.details["code_signature"] = True  # arm64 macOS refuses to load unsigned code
    elif cmd == Cmd.UUID:
        thin.details["uuid"] = r.bytes(off + 8, 16, "LC_UUID").hex()
    elif cmd == Cmd.SYMTAB:
        thin.symtab = (r.u32(off + 8), r.u32(off + 12), r.u32(off + 16), r.u32(off + 20))
    elif cmd == Cmd.DYLD_EXPORTS_TRIE:
        thin.trie = (r.u32(off + 8), r.u32(off + 12))
    elif cmd in (Cmd.DYLD_INFO, Cmd.DYLD_INFO_ONLY):
        if r.u32(off + 44):
            thin.trie = (r.u32(off + 40), r.u32(off + 44))
    elif cmd == Cmd.LINKER_OPTION:
        count = r.u32(off + 8)
        opts, at = [], off + 12
        for _ in range(min(count, size)):
            if at >= off + size:
                break
            s = r.cstr(at, limit=off + size - at)
            opts.append(s)
            at += len(s.encode()) + 1
        thin.details.setdefault("linker_options", []).extend(opts)


def _set_version(thin: _Thin, platform: str, minos: int, sdk: int, source: str) -> None:
    """Record one version command; LC_BUILD_VERSION wins when both are present."""
    if thin.version_source == "LC_BUILD_VERSION" and source != "LC_BUILD_VERSION":
        return
    thin.platform, thin.minos, thin.version_source = platform, version(minos), source
    thin.sdk = version(sdk) if sdk else None


def _apply_platform(facts: Facts, thin: _Thin) -> None:
    if thin.platform is None:
        facts.details["platform"] = None
        return
    facts.details["platform"] = thin.platform
    facts.details["min_version"] = thin.minos
    facts.details["sdk_version"] = thin.sdk
    if thin.platform != "macos":
        return  # iOS & co: not macOS, so no macos_min; os stays unknown to the contract
    facts.os = "macos"
    facts.abi.macos_min = thin.minos
    facts.abi.macos_sdk = thin.sdk
    facts.note("macos_min", f"{thin.version_source} minos {thin.minos}")
    if thin.sdk:
        facts.note("macos_sdk", f"{thin.version_source} sdk {thin.sdk}")


def _symbols(r: Reader, symoff: int, nsyms: int, strtab: bytes, is64: bool,
             trie: tuple[int, int] | None, kind: str | None) -> Symbols:
    """nlist walk: defined = N_EXT in a section/abs/indirect, exports = those not N_PEXT."""
    entry = 16 if is64 else 12
    table = r.view(symoff, nsyms * entry, "symbol table")
    fmt = "<IBBHQ" if is64 else "<IBBHI"
    if not r.le:
        fmt = ">" + fmt[1:]
    sy = Symbols()
    hidden: list[str] = []
    strsize = len(strtab)
    for strx, ntype, _sect, desc, value in struct.iter_unpack(fmt, table):
        if ntype & N_STAB or not ntype & N_EXT:
            continue
        if strx >= strsize:
            raise Truncated(f"symbol name offset {strx} outside the string table ({strsize})")
        end = strtab.find(b"\0", strx)
        name = strtab[strx : end if end >= 0 else strsize].decode("utf-8", "replace")
        t = ntype & N_TYPE
        if t == N_UNDF and value == 0:
            sy.undefined.append(name)
            continue
        if t not in (N_SECT, N_ABS, N_INDR, N_UNDF):  # N_UNDF with a value: common symbol
            continue
        sy.defined.append(name)
        if desc & N_WEAK_DEF:
            sy.weak.add(name)
        (hidden if ntype & N_PEXT else sy.exports).append(name)
    if not sy.exports and trie is not None and kind != "object":
        sy.exports = _trie_exports(r, *trie)  # stripped image: the export trie still names them
        have = set(sy.defined)
        sy.defined.extend(n for n in sy.exports if n not in have)
    return sy


def _uleb(buf: bytes, at: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if at >= len(buf):
            raise Truncated("ULEB128 runs past the export trie")
        b = buf[at]
        at += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, at
        shift += 7
        if shift > 63:
            raise Truncated("ULEB128 longer than 64 bits in the export trie")


def _trie_exports(r: Reader, off: int, size: int) -> list[str]:
    """Names in a dyld export trie (``LC_DYLD_EXPORTS_TRIE`` / ``DYLD_INFO.export_off``)."""
    trie = r.bytes(off, size, "export trie")
    out: list[str] = []
    stack: list[tuple[int, bytes]] = [(0, b"")]
    seen: set[int] = set()
    while stack:
        node, prefix = stack.pop()
        if node in seen or node >= len(trie) or len(seen) > MAX_TRIE_NODES:
            continue  # loops and wild offsets in hostile tries are ignored, not followed
        seen.add(node)
        info_len, at = _uleb(trie, node)
        if info_len:
            out.append(prefix.decode("utf-8", "replace"))
        at += info_len
        if at >= len(trie):
            continue
        nchildren = trie[at]
        at += 1
        for _ in range(nchildren):
            end = trie.find(b"\0", at)
            if end < 0:
                raise Truncated("unterminated edge label in the export trie")
            label = trie[at:end]
            child, at = _uleb(trie, end + 1)
            stack.append((child, prefix + label))
    return sorted(out)


def _cxx_stdlib(facts: Facts, thin: _Thin, strtab: bytes, has_locals: Callable[[], bool]) -> None:
    """libc++ vs libstdc++ from the linked C++ library, else from mangled names.

    "none" needs proof of absence: an object's symbol table holds every reference it makes,
    but a stripped image may have linked a C++ library statically and kept no name of it,
    so an image qualifies only while its local symbols are still there.
    """
    for _how, lib in thin.dylibs:
        for mark, std in CXX_LIBS:
            if lib.endswith(mark):
                facts.abi.cxx_stdlib = std
                facts.note("cxx_stdlib", f"links {lib}")
                return
    for smark, std in CXX_SYMBOL_MARKS:
        n = strtab.count(smark)
        if n:
            facts.abi.cxx_stdlib = std
            facts.note("cxx_stdlib", f"{n} symbol names with {smark.decode()}")
            return
    if not strtab or b"\0__Z" in strtab or strtab.startswith(b"__Z"):
        return
    if facts.kind == "object":
        facts.abi.cxx_stdlib = "none"
        facts.note("cxx_stdlib", "no C++ symbol names")
    elif has_locals():
        facts.abi.cxx_stdlib = "none"
        facts.note("cxx_stdlib", "no C++ library linked and no C++ names (not stripped)")


def _eh(facts: Facts, strtab: bytes, lsda: bool, has_locals: Callable[[], bool]) -> None:
    """``native`` from C++ EH runtime names or an LSDA section; ``none`` only with the whole
    symbol table in view (objects, unstripped images)."""
    hits = [m[2:-1].decode() for m in EH_MARKERS if m in strtab]
    if facts.native_eh(hits, "a __gcc_except_tab section" if lsda else None):
        return
    if strtab and (facts.kind == "object" or has_locals()):
        facts.abi.eh = "none"
        facts.note("eh", "no landing pads and no personality, throw or catch references")


def _has_locals(r: Reader, symtab: tuple[int, int, int, int] | None, is64: bool) -> bool:
    """Whether a non-external section symbol survives (the image was not stripped)."""
    if symtab is None:
        return False
    symoff, nsyms = symtab[0], symtab[1]
    entry = 16 if is64 else 12
    table = r.view(symoff, nsyms * entry, "symbol table")
    types = bytes(table[4::entry])
    return any(not t & (N_STAB | N_EXT) and t & N_TYPE == N_SECT for t in types)


@dataclass(frozen=True)
class _Slice:
    """One architecture of a fat Mach-O file (``fat_arch``/``fat_arch_64``)."""

    cputype: int
    subtype: int
    offset: int
    size: int
    align: int


class MachOFatReader:
    """Universal files: ``CAFEBABE`` (fat_arch) and ``CAFEBABF`` (fat_arch_64), big-endian."""

    name = "macho-fat"

    def sniff(self, head: bytes) -> bool:
        return len(head) >= 8 and head[:4] in magic.MACHO_FAT

    def parse(self, data: Buffer, path: str, opts: ParseOptions) -> Facts:
        r = Reader(data, le=False)
        fat_magic, nfat = r.u32(0), r.u32(4)
        if fat_magic == FAT_MAGIC and nfat >= JAVA_MIN_MAJOR:
            raise FormatError(path, f"a Java class file (class version {nfat & 0xFFFF}."
                                    f"{nfat >> 16}), not a fat Mach-O")
        if nfat == 0 or nfat > MAX_FAT_SLICES:
            raise Truncated(f"fat header declares {nfat} slices")
        slices = [_read_fat_arch(r, fat_magic, i) for i in range(nfat)]
        # the frame dispatches each slice by its magic (``inspect_bytes``)
        parsed: list[Facts] = []
        table_end = 8 + nfat * (32 if fat_magic == FAT_MAGIC_64 else 20)
        for s in slices:
            name = cpu_name(s.cputype, s.subtype)
            if s.offset < table_end:
                raise Truncated(f"slice {name} at offset {s.offset} overlaps the fat header")
            view = r.view(s.offset, s.size, f"slice {name}")
            if bytes(view[:4]) in magic.MACHO_FAT:
                raise Truncated(f"slice {name} is itself a fat file")  # Apple never nests them
            sub = inspect_bytes(view, f"{path}[{name}]", opts)
            sub.details.setdefault("fat_offset", s.offset)
            parsed.append(sub)
        facts = Facts(path=path, format="macho-fat", slices=parsed)
        _summarise(facts)
        facts.details["fat_arch"] = "fat_arch_64" if fat_magic == FAT_MAGIC_64 else "fat_arch"
        return facts


def _read_fat_arch(r: Reader, fat_magic: int, i: int) -> _Slice:
    if fat_magic == FAT_MAGIC_64:
        at = 8 + 32 * i
        return _Slice(r.u32(at), r.u32(at + 4), r.u64(at + 8), r.u64(at + 16), r.u32(at + 24))
    at = 8 + 20 * i
    return _Slice(r.u32(at), r.u32(at + 4), r.u32(at + 8), r.u32(at + 12), r.u32(at + 16))


def _agree(values: list[Any]) -> Any:
    return values[0] if values and all(v == values[0] for v in values) else None


def _summarise(facts: Facts) -> None:
    """File-level facts from the slices, with the archive summary's rules (common value or
    None, highest version floor, per-value counts), so guards read fat files and archives alike."""
    slices = facts.slices or []
    summarise(facts, slices)
    facts.details["archs"] = [s.details.get("cpu", s.arch) for s in slices]
    for attr in ("kind", "soname", "needed"):
        setattr(facts, attr, _agree([getattr(s, attr) for s in slices]))


MACHO = MachOReader()
MACHO_FAT = MachOFatReader()
READERS: list[FormatReader] = [MACHO, MACHO_FAT]
