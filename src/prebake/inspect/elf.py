"""ELF reader (System V gABI + the GNU extensions: symbol versioning, DT_FLAGS_1, GCC LTO).

Facts per docs/binary-formats.md §4: class/endianness/machine from the header; for images,
NEEDED, SONAME, RUNPATH, FLAGS_1, the version needs (``glibc_max``/``glibcxx_max``) and the
dynamic symbols from what the loader reads — ``PT_DYNAMIC`` and the tables its entries point at
— with section headers that disagree an error (``Loaded``, ``_agree``); for objects, the glibc
floor from the undefined symbols looked up in the generated glibc table (``glibc.py``); the
C++ library from
the symbol namespace (``St3__1`` libc++, ``St7__cxx11`` libstdc++ — a substring, not a prefix);
GCC LTO from ``.gnu.lto_*`` sections or ``__gnu_lto_slim``.

Speed matters here: static archives hold thousands of objects. Without ``--symbols`` an object
costs a header, the section types, one search of its section names and two of its string
table (the C++ namespaces; a probe for every name a fact depends on): the symbol table is
decoded only when the probe finds such a name. With ``--symbols``, one pass over the symbol
table. From a file (``windowed``), only those parts are read: the code and relocations,
two thirds of an object's bytes, never are. Those loops are ``hotloops.scan``'s: C where it
is built, else their plain Python reference (``hotloops_py.py``).
"""

from __future__ import annotations

import functools
import os
import struct
from dataclasses import dataclass
from enum import IntEnum

from prebake.errors import FormatError
from prebake.inspect import glibc, hotloops, magic, producer
from prebake.inspect.binreader import Buffer, Source, Truncated, names_at, part, table
from prebake.inspect.facts import Facts, Symbols
from prebake.inspect.hotloops_py import PROBE_BITMAP_BYTES, PROBE_TAIL, tail_hash
from prebake.inspect.reader import ParseOptions

MAGIC = magic.ELF


class EType(IntEnum):
    REL = 1
    EXEC = 2
    DYN = 3
    CORE = 4


class SHT(IntEnum):
    SYMTAB = 2
    STRTAB = 3
    DYNAMIC = 6
    NOBITS = 8
    DYNSYM = 11
    GNU_VERDEF = 0x6FFFFFFD
    GNU_VERNEED = 0x6FFFFFFE
    GNU_VERSYM = 0x6FFFFFFF


class DT(IntEnum):
    NULL = 0
    NEEDED = 1
    HASH = 4
    STRTAB = 5
    SYMTAB = 6
    STRSZ = 10
    SYMENT = 11
    SONAME = 14
    RPATH = 15
    RUNPATH = 29
    GNU_HASH = 0x6FFFFEF5
    VERSYM = 0x6FFFFFF0
    FLAGS_1 = 0x6FFFFFFB
    VERDEF = 0x6FFFFFFC
    VERNEED = 0x6FFFFFFE


PT_LOAD = 1
PT_DYNAMIC = 2
PT_INTERP = 3
PT_GNU_STACK = 0x6474E551  # its flags are the stack's: PF_X asks for an executable one
PF_X = 1
SHF_EXECINSTR = 4
DF_1_PIE = 0x08000000
SHN_UNDEF = 0
SHN_ABS = 0xFFF1
SHN_XINDEX = 0xFFFF
STB_LOCAL, STB_GLOBAL, STB_WEAK, STB_GNU_UNIQUE = 0, 1, 2, 10
STT_FUNC, STT_SECTION, STT_FILE, STT_GNU_IFUNC = 2, 3, 4, 10
STV_HIDDEN, STV_INTERNAL = 2, 1

MACHINES = {62: "x86_64", 183: "aarch64", 40: "arm", 3: "i686"}
MACHINE_CLASS = {62: 2, 183: 2, 40: 1, 3: 1}  # x32 (EM_X86_64 in ELFCLASS32) is not x86_64

# References that only exception-using code makes (C++ throw/catch/cleanups, C cleanups).
EH_MARKERS = frozenset(
    {
        "__gxx_personality_v0",
        "__gcc_personality_v0",
        "_Unwind_Resume",
        "__cxa_throw",
        "__cxa_begin_catch",
        "__cxa_rethrow",
    }
)
GCC_LTO_SLIM = "__gnu_lto_slim"
# names checked as definitions too (a cheap substring test on the string table)
_DEFINABLE = tuple(n.encode() for n in sorted(EH_MARKERS | {GCC_LTO_SLIM}))
CXX_RUNTIME_MARKERS = frozenset({b"__gxx_personality_v0", b"__cxa_throw", b"_Znwm", b"_Znwj"})
VERSION_FAMILIES = ("GLIBC", "GLIBCXX", "CXXABI", "GCC")


LTO_SECTIONS = b".gnu.lto_"
LSDA_SECTION = b".gcc_except_table"
GNU_STACK = b".note.GNU-stack\0"
COMMENT = b".comment\0"  # the compilers' .ident strings (and lld's "Linker:" line)
_MARK_TEXTS = (LTO_SECTIONS, LSDA_SECTION, GNU_STACK)
MAX_COMMENT = 1 << 16  # bytes of .comment read: a linked image's is a few lines


@dataclass(frozen=True, slots=True)
class Layout:
    """Struct shapes for one ELF class and byte order."""

    ehdr: struct.Struct
    shdr: struct.Struct
    phdr: struct.Struct
    sym: struct.Struct  # -> (st_name, st_info, st_other, st_shndx)
    dyn: struct.Struct
    u16: struct.Struct
    u32: struct.Struct
    is64: bool


def _layout(is64: bool, e: str) -> Layout:
    if is64:
        return Layout(
            ehdr=struct.Struct(e + "16sHHIQQQIHHHHHH"),
            shdr=struct.Struct(e + "IIQQQQIIQQ"),
            phdr=struct.Struct(e + "IIQQQQQQ"),
            sym=struct.Struct(e + "IBBH16x"),
            dyn=struct.Struct(e + "qQ"),
            u16=struct.Struct(e + "H"),
            u32=struct.Struct(e + "I"),
            is64=True,
        )
    return Layout(
        ehdr=struct.Struct(e + "16sHHIIIIIHHHHHH"),
        shdr=struct.Struct(e + "IIIIIIIIII"),
        phdr=struct.Struct(e + "IIIIIIII"),
        sym=struct.Struct(e + "I8xBBH"),
        dyn=struct.Struct(e + "iI"),
        u16=struct.Struct(e + "H"),
        u32=struct.Struct(e + "I"),
        is64=False,
    )


LAYOUTS = {(c, d): _layout(c == 2, "<" if d == 1 else ">") for c in (1, 2) for d in (1, 2)}


@dataclass(slots=True)
class Section:
    """One section header, as ``ElfFile.section`` unpacks it on demand."""

    name: int
    type: int
    addr: int
    offset: int
    size: int
    link: int
    info: int
    entsize: int


class ElfFile:
    """One parsed ELF: header, sections, and bounded accessors to their bytes."""

    def __init__(self, data: Source, path: str) -> None:
        self.data = data
        self.path = path
        size = len(data)
        if size < 52:
            raise Truncated(f"ELF header needs 52 bytes, file has {size}")
        head = bytes(data[:64])
        cls, enc = head[4], head[5]
        if (cls, enc) not in LAYOUTS:
            raise FormatError(path, f"unknown ELF class/data bytes {cls}/{enc}")
        self.lay = lay = LAYOUTS[(cls, enc)]
        if size < lay.ehdr.size:
            raise Truncated(f"ELF header needs {lay.ehdr.size} bytes, file has {size}")
        (
            ident,
            self.type,
            self.machine,
            _v,
            _entry,
            self.phoff,
            self.shoff,
            self.flags,
            _ehsize,
            self.phentsize,
            self.phnum,
            self.shentsize,
            self.shnum,
            self.shstrndx,
        ) = lay.ehdr.unpack_from(head, 0)
        self.cls = cls
        self.osabi = ident[7]
        self.little = enc == 1
        self.headers: Buffer = b""  # the section header table, read once
        self.count = self._section_types()
        # the section name table is checked here, read lazily (``shstrtab``) or searched in
        # place (``has_section_text``): GCC's name tables are as large as its string tables
        self._shstr = (0, 0)
        if 0 < self.shstrndx < self.count:
            self._shstr = self._range(self.section(self.shstrndx))
        self._marks: frozenset[bytes] | None = None
        self._table: Buffer | None = None  # the section name table, read once (``names``)

    def has_section_text(self, mark: bytes) -> bool:
        """Whether ``mark`` (one of ``_MARK_TEXTS``) occurs in the section name table, all
        of them looked for in one search: GCC's objects have one section per function, so
        their name tables are as large as their symbol string tables."""
        if self._marks is None:
            found = hotloops.scan.occurs(self.names(), _MARK_TEXTS)
            self._marks = frozenset(t for i, t in enumerate(_MARK_TEXTS) if found >> i & 1)
        return mark in self._marks

    def _section_types(self) -> int:
        """The number of sections, with the whole header table checked to lie in the data.

        Objects in big C++ archives have hundreds of sections each (28 MB of headers in
        libLLVM*.a); only a handful are read, so headers are unpacked one at a time on demand
        (``section``) and ``first`` finds one by type without unpacking the others.
        """
        lay = self.lay
        if self.shoff == 0:
            return 0
        if self.shentsize < lay.shdr.size or self.shentsize % 4:
            raise FormatError(self.path, f"section header entries of {self.shentsize} bytes")
        count = self.shnum
        if count == 0 or self.shstrndx == SHN_XINDEX:
            # extended numbering: the real values live in section 0
            first = table(self.data, self.shoff, 1, lay.shdr, "section header 0")[0]
            count = count or first[5]
            if self.shstrndx == SHN_XINDEX:
                self.shstrndx = first[6]
        end = self.shoff + count * self.shentsize
        if end > len(self.data):
            raise Truncated(f"{count} section headers do not fit in {len(self.data)} bytes")
        self.headers = self.data[self.shoff : end]
        return int(count)

    def section(self, i: int) -> Section:
        if not 0 <= i < self.count:
            raise Truncated(f"section index {i} out of range ({self.count} sections)")
        # every header lies inside the data: ``_section_types`` checked the whole table
        r = self.lay.shdr.unpack_from(self.headers, i * self.shentsize)
        return Section(r[0], r[1], r[3], r[4], r[5], r[6], r[7], r[9])

    def _range(self, sec: Section) -> tuple[int, int]:
        """Where a section's bytes are, checked against the data ((0, 0) when it has none)."""
        if sec.type == SHT.NOBITS or sec.size == 0:
            return 0, 0
        end = sec.offset + sec.size
        if sec.offset < 0 or end > len(self.data):
            raise Truncated(
                f"section at {sec.offset} (+{sec.size}) runs past the end ({len(self.data)} bytes)"
            )
        return sec.offset, end

    def section_bytes(self, sec: Section) -> bytes:
        start, end = self._range(sec)
        return bytes(self.data[start:end])

    def linked_strtab(self, sec: Section) -> bytes:
        return bytes(self.linked_view(sec))

    def linked_view(self, sec: Section) -> Buffer:
        """The linked string table in place (a view into a mapped file): the summary only
        searches it, and 23 MB of tables in libLLVM*.a are not worth copying for that."""
        if not 0 < sec.link < self.count:
            raise FormatError(self.path, f"section's string table index {sec.link} is out of range")
        start, end = self._range(self.section(sec.link))
        return self.data[start:end]

    def first(self, sht: int) -> Section | None:
        if not self.count:  # no table (e_shoff 0): nothing to find, on either path
            return None
        i = hotloops.scan.first_type(self.headers, 0, self.count, self.shentsize, self.little, sht)
        return self.section(i) if i >= 0 else None

    def _phdrs(self) -> list[tuple[int, ...]]:
        """The program headers as the class lays them out."""
        lay = self.lay
        if self.phoff == 0 or self.phnum == 0:
            return []
        if self.phentsize < lay.phdr.size:
            raise FormatError(
                self.path, f"program header entries of {self.phentsize} bytes are too small"
            )
        out: list[tuple[int, ...]] = []
        for i in range(min(self.phnum, len(self.data) // self.phentsize)):
            out.extend(
                table(self.data, self.phoff + i * self.phentsize, 1, lay.phdr, "program header")
            )
        return out

    def segments(self) -> list[tuple[int, ...]]:
        """(type, offset, vaddr, filesz) of every program header, for both classes."""
        if self.lay.is64:
            return [(p[0], p[2], p[3], p[5]) for p in self._phdrs()]
        return [(p[0], p[1], p[2], p[4]) for p in self._phdrs()]

    def stack_flags(self) -> int | None:
        """``PT_GNU_STACK``'s flags (None: the image has no such header)."""
        for p in self._phdrs():
            if p[0] == PT_GNU_STACK:
                return p[1] if self.lay.is64 else p[6]
        return None

    def names(self) -> Buffer:
        """The section name table, read once (in place in a mapped file, one read of a file
        window): the marks are searched in it and the headers' names looked up in it."""
        if self._table is None:
            start, end = self._shstr
            self._table = self.data[start:end]
        return self._table

    def named(self, name: bytes) -> list[int]:
        """The index of every section whose name is ``name`` (NUL-terminated), in one pass
        over the headers read already (``hotloops.scan.named``): a header may point into the
        tail of a longer name, and nothing is copied (a clang object's name table is its whole
        string table, and searching it for a name it lacks cost more than the headers)."""
        if not self.count:
            return []
        return hotloops.scan.named(self.headers, self.count, self.shentsize, self.little,
                                   self.names(), name)

    def note_flags(self, name: bytes) -> int | None:
        """The flags of the (first) section named ``name`` (NUL-terminated, one of
        ``_MARK_TEXTS``, so that a table without it costs nothing more), None when there is
        none."""
        found = self.named(name) if self.has_section_text(name) else []
        if not found:
            return None
        return int(self.lay.shdr.unpack_from(self.headers, found[0] * self.shentsize)[2])


# --------------------------------------------------------------------------------------------
# facts


def _exec_stack(elf: ElfFile, facts: Facts) -> None:
    """Whether the binary asks for an executable stack: an image by its ``PT_GNU_STACK``
    header, an object by its ``.note.GNU-stack`` section (which the linker turns into that
    header of what it links); unknown, with the reason, when it has neither."""
    if facts.kind == "object":
        flags, executable = elf.note_flags(GNU_STACK), SHF_EXECINSTR
        said = (".note.GNU-stack is executable (SHF_EXECINSTR)",
                ".note.GNU-stack is not executable",
                "no .note.GNU-stack section: linkers give what links it an executable stack "
                "on most targets")
    else:
        flags, executable = elf.stack_flags(), PF_X
        said = ("PT_GNU_STACK is RWE (executable)", "PT_GNU_STACK is RW (not executable)",
                "no PT_GNU_STACK header: the stack is the loader's default (executable on x86)")
    if flags is not None:
        facts.abi.exec_stack = bool(flags & executable)
    facts.note("exec_stack", said[2] if flags is None else said[0] if flags & executable
               else said[1])


_NO_COMMENT = "no .comment section (built with -fno-ident, assembled, or stripped of it)"
_NO_SECTIONS = "no section headers (stripped): no .comment to read"


def _producer(elf: ElfFile, facts: Facts) -> None:
    """The compilers' ``.ident`` strings in ``.comment`` (every GCC and clang object has one;
    a link merges its inputs' into the image's, so an image also names the runtime objects
    it linked: docs/toolchains.md). Read bounded: the first ``MAX_TEXTS`` sections of that
    name (a hostile file may name thousands so), ``MAX_COMMENT`` bytes of each; none when
    there is no such section."""
    found = elf.named(COMMENT)
    if not found:
        facts.note("producer", _NO_COMMENT if elf.count else _NO_SECTIONS)
        return
    records: dict[str, producer.Producer | None] = {}
    for i in found[: producer.MAX_TEXTS]:
        sec = elf.section(i)
        start, end = elf._range(sec)
        if end <= start:  # NOBITS or empty
            continue
        for text, parsed in producer.parsed(bytes(elf.data[start : min(end,
                                                                      start + MAX_COMMENT)])):
            records.setdefault(text, parsed)
        if sec.size > MAX_COMMENT:
            facts.note("producer", f".comment of {sec.size} bytes: the first {MAX_COMMENT} read")
    producer.record(facts, [(".comment", t, p) for t, p in records.items()], absent=_NO_COMMENT)


def _os_evidence(elf: ElfFile, needed: list[str] | None, versions: list[str]) -> str | None:
    if elf.osabi == 3:
        return "EI_OSABI is GNU/Linux"
    for n in needed or []:
        if n.startswith(("libc.so", "ld-linux")):
            return f"NEEDED {n}"
    if any(v.startswith("GLIBC_") for v in versions):
        return "requires GLIBC_* symbol versions"
    if elf.osabi == 0 and elf.has_section_text(GNU_STACK):
        return "System V ABI object with the GNU toolchain's .note.GNU-stack"
    return None


@dataclass(slots=True)
class Loaded:
    """What the dynamic loader reads of an image: the ``PT_DYNAMIC`` segment's entries and
    the file offsets of the tables they point at (through the ``PT_LOAD`` segments), never
    the section headers, which nothing at run time reads and anyone can retype.

    Offsets are ``None`` where the image has no such entry; ``nsyms`` is how many dynamic
    symbols the loader's hash table covers at least (``DT_HASH``'s ``nchain`` exactly;
    ``DT_GNU_HASH`` hashes only the defined symbols, which come last, so one past the last
    symbol its chains reach), ``None`` without either."""

    rows: list[tuple[int, int]]
    dynamic: tuple[int, int]  # PT_DYNAMIC's file offset and size
    strtab: bytes  # DT_STRTAB, DT_STRSZ bytes
    at: dict[int, int]  # DT tag (STRTAB, SYMTAB, VERNEED, VERSYM, VERDEF) -> file offset
    ends: dict[int, int]  # ... -> where the PT_LOAD segment holding it ends in the file
    nsyms: int | None


def _loaded(elf: ElfFile) -> Loaded | None:
    """The loader's view of an image (``None`` without ``PT_DYNAMIC``: nothing is loaded
    dynamically; also for one of no bytes in the file, which glibc refuses to load, "object
    file has no dynamic section": a separate debug-info file, whose sections are NOBITS).
    A pointer no ``PT_LOAD`` segment maps is an error: the loader would read memory the file
    does not describe."""
    lay = elf.lay
    segs = elf.segments()
    dyn = next((s for s in segs if s[0] == PT_DYNAMIC), None)
    if dyn is None or dyn[3] == 0:
        return None
    count = dyn[3] // lay.dyn.size
    rows = _until_null(table(elf.data, dyn[1], count, lay.dyn, "dynamic segment"))
    loads = [(off, vaddr, filesz) for typ, off, vaddr, filesz in segs if typ == PT_LOAD]
    at: dict[int, int] = {}
    ends: dict[int, int] = {}
    for tag in (DT.STRTAB, DT.SYMTAB, DT.VERNEED, DT.VERSYM, DT.VERDEF, DT.HASH, DT.GNU_HASH):
        addr = next((v for t, v in rows if t == tag), None)
        if addr is None:
            continue
        for off, vaddr, filesz in loads:
            if vaddr <= addr < vaddr + filesz:
                at[tag] = off + (addr - vaddr)
                ends[tag] = min(off + filesz, len(elf.data))
                break
        else:
            raise Truncated(f"{DT(tag).name} points at address {addr:#x}, which no PT_LOAD "
                            "segment maps from the file")
    strtab = b""
    if DT.STRTAB in at:
        strsz = next((v for t, v in rows if t == DT.STRSZ), 0)
        start = at[DT.STRTAB]
        if strsz > ends[DT.STRTAB] - start:
            raise Truncated(f"DT_STRSZ {strsz} runs past the segment holding DT_STRTAB")
        strtab = bytes(elf.data[start : start + strsz])
    return Loaded(rows, (dyn[1], dyn[3]), strtab, at, ends, _nsyms(elf, at, ends))


def _nsyms(elf: ElfFile, at: dict[int, int], ends: dict[int, int]) -> int | None:
    """How many dynamic symbols the loader's hash table covers: ``nchain`` of ``DT_HASH``,
    or one past the last symbol a ``DT_GNU_HASH`` chain reaches (its ``symoffset`` when no
    bucket is used: an executable that defines nothing has only undefined symbols, and GNU
    ld then writes ``symoffset`` 1 whatever their number)."""
    u32 = elf.lay.u32
    if DT.HASH in at:
        off = at[DT.HASH]
        if off + 8 > ends[DT.HASH]:
            raise Truncated("DT_HASH header runs past its segment")
        return int(u32.unpack(bytes(elf.data[off + 4 : off + 8]))[0])
    if DT.GNU_HASH not in at:
        return None
    off, end = at[DT.GNU_HASH], ends[DT.GNU_HASH]
    if off + 16 > end:
        raise Truncated("DT_GNU_HASH header runs past its segment")
    nbuckets, symoffset, bloom, _shift = (
        u32.unpack_from(bytes(elf.data[off : off + 16]), i)[0] for i in (0, 4, 8, 12))
    buckets_at = off + 16 + bloom * (8 if elf.lay.is64 else 4)
    chains_at = buckets_at + 4 * nbuckets
    if chains_at > end:
        raise Truncated(f"DT_GNU_HASH: {nbuckets} buckets run past their segment")
    raw = bytes(elf.data[buckets_at:chains_at])
    top = max((v[0] for v in u32.iter_unpack(raw)), default=0)
    if top < symoffset:
        return int(symoffset)
    i = top - symoffset  # the last chain: follow it to the entry with the low bit set
    step = 256
    while True:
        start = chains_at + 4 * i
        if start + 4 > end:
            raise Truncated("a DT_GNU_HASH chain runs past its segment")
        chunk = bytes(elf.data[start : min(end, start + 4 * step)])
        for j, (v,) in enumerate(u32.iter_unpack(chunk[: len(chunk) - len(chunk) % 4])):
            if v & 1:
                return int(top + j + 1)
        top += len(chunk) // 4
        i += len(chunk) // 4


def _until_null(rows: list[tuple[int, ...]]) -> list[tuple[int, int]]:
    out = []
    for tag, val in rows:
        if tag == DT.NULL:
            break
        out.append((tag, val))
    return out


def _str(strtab: bytes, off: int) -> str:
    return names_at(strtab, [off])[0] if 0 <= off < len(strtab) else ""


def _verneed(elf: ElfFile, raw: Source, strtab: bytes) -> tuple[list[tuple[str, str]],
                                                                 dict[int, str]]:
    """(library, version name) pairs and version index -> name, from a version-needs table
    (``DT_VERNEED``'s bytes to the end of their segment). The chain is walked as the loader
    walks it, to ``vn_next == 0``: one that runs past those bytes is an error, never an
    early stop that would leave a requirement unread."""
    u16, u32 = elf.lay.u16, elf.lay.u32
    out: list[tuple[str, str]] = []
    index: dict[int, str] = {}

    def rec(at: int, what: str) -> bytes:
        if at < 0 or at + 16 > len(raw):
            raise Truncated(f"{what} at {at} runs past the version-needs table")
        return bytes(raw[at : at + 16])

    off = 0
    budget = len(raw) // 16 + 1  # every record is 16 bytes: more steps means a cycle
    while True:
        budget -= 1
        head = rec(off, "a Verneed record")
        lib = _str(strtab, u32.unpack_from(head, 4)[0])
        aux = off + u32.unpack_from(head, 8)[0]
        while True:  # to vna_next == 0, as glibc's loader does (vn_cnt is not consulted)
            budget -= 1
            if budget < 0:
                raise Truncated("the version-needs chain loops")
            a = rec(aux, "a Vernaux record")
            other = u16.unpack_from(a, 6)[0]
            name = _str(strtab, u32.unpack_from(a, 8)[0])
            out.append((lib, name))
            index[other & 0x7FFF] = name
            nxt = u32.unpack_from(a, 12)[0]
            if nxt == 0:
                break
            aux += nxt
        nxt = u32.unpack_from(head, 12)[0]
        if nxt == 0 or budget < 0:
            if budget < 0:
                raise Truncated("the version-needs chain loops")
            break
        off += nxt
    return out, index


def _table_at(elf: ElfFile, loaded: Loaded, tag: int) -> Source:
    """The bytes from what ``tag`` points at to the end of the segment holding it, as a
    window (nothing read until sliced) or a view."""
    start = loaded.at[tag]
    return part(elf.data, start, loaded.ends[tag])


SECTION_OF = {  # DT tag -> the section type that describes the same table
    DT.SYMTAB: SHT.DYNSYM, DT.VERNEED: SHT.GNU_VERNEED, DT.VERSYM: SHT.GNU_VERSYM,
    DT.VERDEF: SHT.GNU_VERDEF,
}


def _agree(elf: ElfFile, loaded: Loaded | None) -> None:
    """Section headers that describe the dynamic tables differently from what the loader
    reads are an error naming both: retyping ``.dynamic`` or ``.gnu.version_r`` hides a
    NEEDED library or a GLIBC_2.34 requirement from a reader of sections, never from the
    loader. An image without section headers has nothing to disagree with."""
    if not elf.count:
        return
    dsec = elf.first(SHT.DYNAMIC)
    if loaded is None:
        if dsec is not None:
            raise FormatError(elf.path, f"section {_sname(elf, dsec)} is SHT_DYNAMIC but "
                                        "there is no PT_DYNAMIC segment (what the loader "
                                        "reads); the section headers disagree with it")
        return
    off = loaded.dynamic[0]
    if dsec is None or dsec.offset != off:
        there = _section_at(elf, off)
        raise FormatError(elf.path, f"PT_DYNAMIC is at offset {off:#x}, but "
                          + (f"the SHT_DYNAMIC section {_sname(elf, dsec)} is at "
                             f"{dsec.offset:#x}" if dsec is not None
                             else "no section is SHT_DYNAMIC")
                          + (f" (section {there} is there)" if there else "")
                          + "; the section headers disagree with what the loader reads")
    strsec = elf.section(dsec.link) if 0 < dsec.link < elf.count else None
    if DT.STRTAB in loaded.at and (strsec is None or strsec.offset != loaded.at[DT.STRTAB]):
        raise FormatError(elf.path, f"DT_STRTAB is at offset {loaded.at[DT.STRTAB]:#x}, but "
                          f"the section {_sname(elf, dsec)} links to "
                          + (f"{_sname(elf, strsec)} at {strsec.offset:#x}" if strsec
                             else f"no section (sh_link {dsec.link})")
                          + "; the section headers disagree with what the loader reads")
    for tag, sht in SECTION_OF.items():
        sec = elf.first(sht)
        want = loaded.at.get(tag)
        if want is None and sec is None:
            continue
        if want is None and sec is not None:
            raise FormatError(elf.path, f"section {_sname(elf, sec)} is {SHT(sht).name} but "
                              f"PT_DYNAMIC has no DT_{DT(tag).name}; the section headers "
                              "disagree with what the loader reads")
        if sec is None or sec.offset != want:
            there = _section_at(elf, want or 0)
            raise FormatError(
                elf.path, f"DT_{DT(tag).name} points at offset {want:#x}, but "
                + (f"the {SHT(sht).name} section {_sname(elf, sec)} is at {sec.offset:#x}"
                   if sec is not None else f"no section is {SHT(sht).name}")
                + (f" (section {there} is there)" if there else "")
                + "; the section headers disagree with what the loader reads")
        if tag == DT.SYMTAB and loaded.nsyms is not None and (
                sec.size // (sec.entsize or elf.lay.sym.size) < loaded.nsyms
                or (DT.HASH in loaded.at
                    and sec.size // (sec.entsize or elf.lay.sym.size) != loaded.nsyms)):
            raise FormatError(elf.path, f"the hash table covers {loaded.nsyms} dynamic "
                              f"symbols, but section {_sname(elf, sec)} holds "
                              f"{sec.size // (sec.entsize or elf.lay.sym.size)}; the section "
                              "headers disagree with what the loader reads")


# section types prebake does not read, named in messages (what a retyped section became)
OTHER_SHT = {0: "NULL", 1: "PROGBITS", 4: "RELA", 5: "HASH", 7: "NOTE", 9: "REL"}


def _sname(elf: ElfFile, sec: Section | None) -> str:
    """A section's name for a message: ``'.gnu.version_r'`` (type PROGBITS)."""
    if sec is None:
        return "?"
    start, end = elf._shstr
    name = ""
    if end > start and 0 <= sec.name < end - start:
        raw = bytes(elf.data[start + sec.name : min(end, start + sec.name + 64)])
        name = raw.split(b"\0", 1)[0].decode("utf-8", "replace")
    kind = (SHT(sec.type).name if sec.type in SHT._value2member_map_
            else OTHER_SHT.get(sec.type, f"{sec.type:#x}"))
    return f"{name!r} (type {kind})"


def _section_at(elf: ElfFile, off: int) -> str | None:
    for i in range(1, elf.count):
        sec = elf.section(i)
        if sec.offset == off and sec.size:
            return f"{i} {_sname(elf, sec)}"
    return None


def _verdef_names(elf: ElfFile, loaded: Loaded | None = None) -> set[str]:
    """The version names an image defines: from ``DT_VERDEF`` where ``loaded`` is given,
    else from the ``.gnu.version_d`` section (the version proof's reading of a library)."""
    return set(_verdefs(elf, loaded).values())


def _verdefs(elf: ElfFile, loaded: Loaded | None = None) -> dict[int, str]:
    """``vd_ndx`` -> version name of each definition (``_verdef_names``' reading): a defined
    symbol's ``.gnu.version`` entry is such an index."""
    if loaded is not None:
        if DT.VERDEF not in loaded.at:
            return {}
        start = loaded.at[DT.VERDEF]
        # a verdef table is a few records: its bytes up to 64 KiB of the segment are read
        raw: Buffer = bytes(elf.data[start : min(loaded.ends[DT.VERDEF], start + (1 << 16))])
        strtab = loaded.strtab
    else:
        sec = elf.first(SHT.GNU_VERDEF)
        if sec is None:
            return {}
        raw = elf.section_bytes(sec)
        strtab = elf.linked_strtab(sec)
    u16, u32 = elf.lay.u16, elf.lay.u32
    out: dict[int, str] = {}
    off = 0
    budget = len(raw) // 20 + 1
    while budget > 0 and off + 20 <= len(raw):
        budget -= 1
        aux = off + u32.unpack_from(raw, off + 12)[0]
        if aux + 8 <= len(raw):
            out[u16.unpack_from(raw, off + 4)[0]] = _str(strtab, u32.unpack_from(raw, aux)[0])
        nxt = u32.unpack_from(raw, off + 16)[0]
        if nxt == 0:
            break
        off += nxt
    return out


def _family_max(names: list[str], family: str) -> str | None:
    prefix = family + "_"
    vers = [
        n[len(prefix) :]
        for n in names
        if n.startswith(prefix) and n[len(prefix) : len(prefix) + 1].isdigit()
    ]
    return glibc.max_version(vers)


class _Probe:
    """Finds, in a string table, any candidate name followed by a NUL (``hotloops.scan.probe``).

    Candidates: the EH markers, ``__gnu_lto_slim``, ``personality_v0`` (the definition
    trigger in ``_object``) and the arch's glibc table. A symbol's name is the bytes from its
    offset to the next NUL, and string tables share tails (``stat`` may live inside
    ``__xstat``), so ``name + NUL`` occurs in the table for every symbol name: a miss proves
    that no symbol has a candidate's name. Candidates are keyed by their last ``PROBE_TAIL``
    bytes (``tails``; ``bitmap`` has a bit per ``tail_hash`` of each, the C loop's pre-filter;
    both constants are ``_scan_consts.h``'s); names shorter than that (none in today's tables)
    are looked for one by one.
    """

    def __init__(self, names: set[bytes]) -> None:
        by_tail: dict[bytes, list[bytes]] = {}
        for n in sorted(names):
            if len(n) >= PROBE_TAIL:
                by_tail.setdefault(n[-PROBE_TAIL:], []).append(n)
        self.tails = {t: tuple(ns) for t, ns in by_tail.items()}
        self.short = sorted(n + b"\0" for n in names if 0 < len(n) < PROBE_TAIL)
        bits = bytearray(PROBE_BITMAP_BYTES)
        for t in self.tails:
            h = tail_hash(t)
            bits[h >> 3] |= 1 << (h & 7)
        self.bitmap = bytes(bits)

    def hit(self, table: Buffer) -> bool:
        if self.short:
            whole = bytes(table)
            if any(n in whole for n in self.short):
                return True
        return bool(self.tails) and hotloops.scan.probe(table, self.bitmap, self.tails)


@functools.cache
def _probe(arch: str | None) -> _Probe:
    names = {m.encode() for m in EH_MARKERS} | {GCC_LTO_SLIM.encode(), b"personality_v0"}
    if arch is not None:
        names |= glibc.table(arch).keys()
    return _Probe(names)


def _may_name(strtab: Buffer, arch: str | None) -> bool:
    """False only when no symbol can be named like a probe candidate (a proof of absence)."""
    if not len(strtab) or strtab[-1] != 0:
        return True  # the last name ends at the table's end, not at a NUL: decode precisely
    return _probe(arch).hit(strtab)


_NAMESPACE_TEXTS = (b"St3__1", b"St7__cxx11")  # libc++'s std::__1, libstdc++'s std::__cxx11


def _namespaces(names: Buffer) -> tuple[bool, bool]:
    """Whether ``St3__1`` and ``St7__cxx11`` occur in ``names``."""
    found = hotloops.scan.occurs(names, _NAMESPACE_TEXTS)
    return bool(found & 1), bool(found & 2)


def _cxx_stdlib(
    facts: Facts, names: Buffer, needed: list[str] | None, versions: list[str], *, complete: bool
) -> None:
    """libc++ vs libstdc++ by namespace (§4.3), NEEDED, or GLIBCXX versions; "none" for C."""
    abi = facts.abi
    libcxx_ns, libstdcxx_ns = _namespaces(names)
    if libcxx_ns:
        abi.cxx_stdlib = "libc++"
        facts.note("cxx_stdlib", "symbols in libc++'s std::__1 namespace (St3__1)")
        return
    reasons = []
    if libstdcxx_ns:
        reasons.append("symbols in libstdc++'s std::__cxx11 namespace")
    reasons += [f"NEEDED {n}" for n in needed or [] if n.startswith("libstdc++")]
    if any(v.startswith("GLIBCXX_") for v in versions):
        reasons.append("requires GLIBCXX_* versions")
    libcxx = [n for n in needed or [] if n.startswith("libc++.so")]
    if libcxx:
        abi.cxx_stdlib = "libc++"
        facts.note("cxx_stdlib", f"NEEDED {libcxx[0]}")
    elif reasons:
        abi.cxx_stdlib = "libstdc++"
        for r in reasons:
            facts.note("cxx_stdlib", r)
    elif complete and _no_cxx(names):
        abi.cxx_stdlib = "none"
        facts.note("cxx_stdlib", "no C++ (mangled) symbols")
    # else: C++ without a namespace marker (old ABI, no std types): unknown, stays null


def _no_cxx(names: Buffer) -> bool:
    """No mangled name and no C++ runtime marker."""
    if names[:2] == b"_Z" or hotloops.scan.occurs(names, (b"\0_Z",)):
        return False
    table = bytes(names)
    return not any(b"\0" + m + b"\0" in table for m in CXX_RUNTIME_MARKERS)


def _gcc_lto(elf: ElfFile, facts: Facts, names: set[str]) -> None:
    lto_sections = elf.has_section_text(LTO_SECTIONS)
    slim = GCC_LTO_SLIM in names
    if lto_sections or slim:
        facts.abi.lto = "gcc-lto"
        if lto_sections:
            facts.note("lto", "has .gnu.lto_* sections (GCC GIMPLE)")
        if slim:
            facts.note("lto", "defines __gnu_lto_slim (slim LTO object: no machine code)")
            facts.format = "gcc-lto"
    else:
        facts.abi.lto = "none"


def _eh(elf: ElfFile, facts: Facts, names: set[str], *, complete: bool) -> None:
    """``native`` from EH runtime references or landing-pad tables; ``none`` only when the
    symbols seen are the whole story (objects, unstripped images) and neither is there."""
    lsda = elf.has_section_text(LSDA_SECTION)
    if facts.native_eh(sorted(EH_MARKERS & names), ".gcc_except_table" if lsda else None):
        return
    if complete:
        facts.abi.eh = "none"
        facts.note("eh", "no landing pads and no personality, throw or catch references")
    else:
        facts.note("eh", "stripped: no symbol table or section headers to tell")


def _object_glibc(facts: Facts, undefined: list[str]) -> None:
    """glibc floor of an object from its undefined symbols and the generated table."""
    arch = facts.arch
    if arch is None or facts.os not in ("linux", None):
        # os None: objects rarely say; an x86_64/aarch64/arm/i686 ELF object that calls
        # __isoc23_strtol needs glibc 2.38 wherever it is linked against glibc
        return
    tab = glibc.table(arch)
    hits = [n.encode() for n in glibc.names(arch).intersection(undefined)]
    if not hits:
        facts.note("glibc_max", f"no undefined symbol needs a glibc newer than {glibc.TABLE_FLOOR}")
        return
    facts.abi.glibc_max = glibc.max_version([tab[h] for h in hits])
    # newest first, names in byte order within a version (a set's order changes per process)
    for h in sorted(sorted(set(hits)), key=lambda h: glibc.version_key(tab[h]), reverse=True)[:5]:
        facts.note("glibc_max", f"references {h.decode()} (glibc {tab[h]})")


class ElfReader:
    name = "elf"
    windowed = True  # reads headers, name and string tables, symbols: never code

    def sniff(self, head: bytes) -> bool:
        return head[:4] == MAGIC

    def parse(self, data: Source, path: str, opts: ParseOptions) -> Facts:
        elf = ElfFile(data, path)
        facts = Facts(path=path, format="elf")
        arch = MACHINES.get(elf.machine)
        if arch is not None and (MACHINE_CLASS[elf.machine] != elf.cls or not elf.little):
            arch = None  # x32, or a big-endian variant (aarch64_be, armeb): not prebake's arches
        facts.arch = arch
        facts.details["machine"] = elf.machine
        facts.details["class"] = 64 if elf.lay.is64 else 32
        if elf.machine == 40:
            facts.details["arm_float_abi"] = "hard" if elf.flags & 0x400 else "soft"
        if elf.type == EType.REL:
            self._object(elf, facts, opts)
        elif elf.type in (EType.DYN, EType.EXEC):
            self._image(elf, facts, opts)
        else:
            facts.kind = None
            facts.details["e_type"] = elf.type
        return facts

    def _object(self, elf: ElfFile, facts: Facts, opts: ParseOptions) -> None:
        facts.kind = "object"
        sec = elf.first(SHT.SYMTAB)
        # searched in place; copied only where names are decoded or tested with ``in``
        view = elf.linked_view(sec) if sec is not None else b""
        strtab = b""
        ev = _os_evidence(elf, None, [])
        if ev:
            facts.os = "linux"
            facts.note("os", ev)
        # Without --symbols, a miss of the probe proves that no symbol is named like an EH
        # marker, __gnu_lto_slim or a glibc table entry, and that "personality_v0\0" is absent:
        # every check below then has its answer without decoding the symbol table.
        hit = sec is not None
        if sec is not None and (opts.symbols or _may_name(view, facts.arch)):
            strtab = bytes(view)
            symbols = _object_symbols(elf, sec, strtab)
            undefined = symbols.undefined
            if opts.symbols:
                facts.symbols = symbols
        else:
            undefined, hit = [], False
        # markers a definition can carry too (libsupc++ defines the personality routine)
        names = set(undefined)
        if (hit and b"personality_v0\0" in strtab) or elf.has_section_text(LTO_SECTIONS):
            strtab = strtab or bytes(view)
            names |= {m.decode() for m in _DEFINABLE if b"\0" + m + b"\0" in strtab}
        _gcc_lto(elf, facts, names)
        _eh(elf, facts, names, complete=True)
        _cxx_stdlib(facts, view, None, [], complete=True)
        _object_glibc(facts, undefined)
        _exec_stack(elf, facts)
        _producer(elf, facts)

    def _image(self, elf: ElfFile, facts: Facts, opts: ParseOptions) -> None:
        loaded = _loaded(elf)
        _agree(elf, loaded)
        rows, dynstr = (loaded.rows, loaded.strtab) if loaded is not None else ([], b"")
        needed = [_str(dynstr, v) for t, v in rows if t == DT.NEEDED]
        soname = next((_str(dynstr, v) for t, v in rows if t == DT.SONAME), None)
        runpath = [_str(dynstr, v) for t, v in rows if t in (DT.RUNPATH, DT.RPATH)]
        flags1 = next((v for t, v in rows if t == DT.FLAGS_1), 0)
        interp = any(s[0] == PT_INTERP for s in elf.segments())
        if elf.type == EType.EXEC or flags1 & DF_1_PIE:
            facts.kind = "executable"
        else:
            facts.kind = "shared-library"
            if interp:
                facts.note("kind", "shared object with a program interpreter (PT_INTERP)")
        facts.needed = needed
        facts.soname = soname
        if runpath:
            facts.details["runpath"] = runpath
        verneed: list[tuple[str, str]] = []
        verindex: dict[int, str] = {}
        if loaded is not None and DT.VERNEED in loaded.at:
            verneed, verindex = _verneed(elf, _table_at(elf, loaded, DT.VERNEED), dynstr)
        vnames = [v for _, v in verneed]
        ev = _os_evidence(elf, needed, vnames)
        if ev:
            facts.os = "linux"
            facts.note("os", ev)
        abi = facts.abi
        abi.glibc_max = _family_max(vnames, "GLIBC")
        abi.glibcxx_max = _family_max(vnames, "GLIBCXX")
        for fam in VERSION_FAMILIES:
            best = _family_max(vnames, fam)
            if best is not None:
                facts.details.setdefault("version_max", {})[fam] = best
                facts.note(
                    "glibc_max"
                    if fam == "GLIBC"
                    else "glibcxx_max"
                    if fam == "GLIBCXX"
                    else "versions",
                    f"requires {fam}_{best}",
                )
        if facts.os == "linux" and not verneed:
            facts.note("glibc_max", "no symbol versions: static or not linked against glibc")
        # the dynamic string table as the loader reads it (the sections agree, or it failed)
        dstr = dynstr if loaded is not None and DT.SYMTAB in loaded.at else b""
        # an unstripped image's .symtab also shows what static linking hid from .dynsym
        ssec = elf.first(SHT.SYMTAB)
        sstr = elf.linked_strtab(ssec) if ssec is not None else b""
        allstr = dstr + b"\0" + sstr
        names = {n.decode("utf-8", "replace") for n in dstr.split(b"\0")}
        # .symtab can be huge: look only for the few names that matter, not a set of all
        names |= {m.decode() for m in _DEFINABLE if b"\0" + m + b"\0" in sstr}
        _gcc_lto(elf, facts, names)
        _eh(elf, facts, names, complete=elf.count > 0)
        lsda = elf.has_section_text(LSDA_SECTION)
        _cxx_stdlib(facts, allstr, needed, vnames, complete=ssec is not None or not lsda)
        _exec_stack(elf, facts)
        _producer(elf, facts)
        if loaded is not None and DT.SYMTAB in loaded.at and opts.symbols:
            facts.symbols = _image_symbols(elf, loaded, verindex)


def _object_symbols(elf: ElfFile, sec: Section, strtab: bytes) -> Symbols:
    defined, undefined, exports, weak = hotloops.scan.object_symbols(
        elf.section_bytes(sec), strtab, elf.lay.is64, elf.little)
    return Symbols(defined=defined, undefined=undefined, exports=exports, weak=weak)


def _image_symbols(elf: ElfFile, loaded: Loaded, verindex: dict[int, str]) -> Symbols:
    """The dynamic symbols the loader looks up: ``DT_SYMTAB``, as many as the hash table
    covers (or, without one, as the ``.dynsym`` section holds: ``_agree`` placed it)."""
    st = elf.lay.sym
    nsyms = loaded.nsyms or 0
    dsec = elf.first(SHT.DYNSYM)
    if dsec is not None and DT.HASH not in loaded.at:
        # GNU_HASH covers the defined symbols, and the undefined ones before them (fewer
        # or none when nothing is defined): the section ``_agree`` placed counts them all
        nsyms = max(nsyms, dsec.size // st.size)
    entsize = next((v for t, v in loaded.rows if t == DT.SYMENT), st.size) or st.size
    if entsize < st.size:
        raise Truncated(f"DT_SYMENT {entsize} is smaller than a symbol ({st.size} bytes)")
    start = loaded.at[DT.SYMTAB]
    if nsyms * entsize > loaded.ends[DT.SYMTAB] - start:
        raise Truncated(f"{nsyms} dynamic symbols run past the segment holding DT_SYMTAB")
    raw = bytes(elf.data[start : start + nsyms * entsize])
    rows = [st.unpack_from(raw, i * entsize) for i in range(nsyms)]
    versym: list[int] = []
    if DT.VERSYM in loaded.at:
        vstart = loaded.at[DT.VERSYM]
        vend = min(loaded.ends[DT.VERSYM], vstart + 2 * nsyms)
        vraw = bytes(elf.data[vstart:vend])
        versym = [v[0] for v in elf.lay.u16.iter_unpack(vraw[: len(vraw) - len(vraw) % 2])]
    verdefs = _verdefs(elf, loaded)
    version_names = set(verdefs.values())
    strtab = loaded.strtab
    names = names_at(strtab, [r[0] for r in rows])
    out = Symbols()
    functions: set[str] = set()
    for i, ((_, info, other, shndx), name) in enumerate(zip(rows, names, strict=True)):
        bind = info >> 4
        if bind == STB_LOCAL or not name or (info & 0xF) in (STT_SECTION, STT_FILE):
            continue
        if shndx == SHN_UNDEF:
            out.undefined.append(name)
            if i < len(versym) and (versym[i] & 0x7FFF) in verindex:
                out.versions[name] = verindex[versym[i] & 0x7FFF]
            continue
        if shndx == SHN_ABS and name in version_names:
            continue  # the version-name symbol (VERS_1.30.0), not code
        # versym 0 and 1 are "local" and "global": no node of the library's own
        node = verdefs.get(versym[i] & 0x7FFF) if i < len(versym) and versym[i] & 0x7FFF > 1 \
            else None
        out.defined.append(name)
        if bind in (STB_WEAK, STB_GNU_UNIQUE):
            out.weak.add(name)
        if other & 3 not in (STV_HIDDEN, STV_INTERNAL):
            out.exports.append(name)
            if node is not None:
                out.export_versions[name] = node
            if info & 0xF in (STT_FUNC, STT_GNU_IFUNC):
                functions.add(name)
    out.functions = functions
    return out


READER = ElfReader()


def version_nodes(path: os.PathLike[str]) -> list[str]:
    """The symbol version nodes an ELF library defines (``VERS_1.21.0``), minus its own
    file-name node; [] for anything else. The version proof reads them as evidence."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_VERSION_NODE_FILE + 1)
    except OSError:
        return []
    if len(data) > MAX_VERSION_NODE_FILE or not data.startswith(b"\x7fELF"):
        return []
    try:
        names = _verdef_names(ElfFile(data, os.fspath(path)))
    except (FormatError, Truncated, struct.error, ValueError, IndexError):
        return []
    # the first definition names the file itself (libonnxruntime.so.1), not a version
    return sorted(n for n in names if not n.startswith("lib"))


MAX_VERSION_NODE_FILE = 1 << 30
