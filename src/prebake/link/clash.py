"""Symbol clashes a linker may not report.

(a) A strong symbol defined by more than one static archive of a set (two copies of protobuf):
    GNU ld takes whichever archive it scans first and the program silently mixes versions.
(b) A shared library exporting third-party namespaces (``_ZN6google8protobuf*``, ``_ZN4absl*``):
    it interposes on, or is interposed by, the host's own copy. That rule is data
    (``forbid_exports``); this module gives the same matching to callers without a contract.

Weak definitions (C++ inline functions, templates, COMDAT) legitimately repeat and are ignored,
and so are COFF members, whose COMDAT definitions look strong in the symbol table. ELF
``STB_GNU_UNIQUE`` definitions (static data of templates, merged by the linker) are not in
``Symbols.weak``, so the few candidate clashes in ELF members are re-read here to drop them.
"""

from __future__ import annotations

import mmap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from prebake.contract.check import Violation
from prebake.contract.rules import matching_exports, member_name
from prebake.errors import PrebakeError
from prebake.inspect.facts import Facts

MAX_SHOWN = 8


@dataclass(frozen=True)
class Clash:
    """One symbol and every ``archive(member)`` that defines it strongly."""

    symbol: str
    definitions: tuple[tuple[str, str], ...]  # (archive, member)

    def archives(self) -> list[str]:
        return sorted({a for a, _ in self.definitions})


def strong_definitions(facts: Facts) -> dict[str, str]:
    """Symbol -> first member defining it strongly, over an archive's members."""
    out: dict[str, str] = {}
    for m in facts.members or [facts]:
        if m.symbols is None or m.format == "coff" or m.error is not None:
            continue
        weak = m.symbols.weak
        name = member_name(m)
        for sym in m.symbols.defined:
            if sym not in weak:
                out.setdefault(sym, name)
    return out


STB_GNU_UNIQUE = 10
AR_HEADER = 60


def gnu_unique(archive: Path, header_offset: int, names: Iterable[str]) -> set[str]:
    """Of ``names``, those the ELF member at ``header_offset`` defines as ``STB_GNU_UNIQUE``.

    Reads only the member's symbol table; any parse problem answers "none" (the clash then
    stays reported, which is the safe side).
    """
    from prebake.inspect.elf import SHT, ElfFile

    wanted = set(names)
    try:
        with open(archive, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            name = bytes(mm[header_offset : header_offset + 16])
            start = header_offset + AR_HEADER
            if name.startswith(b"#1/"):  # BSD: the real name precedes the data
                start += int(name[3:].strip() or b"0")
            view = memoryview(mm)[start:]
            try:
                elf = ElfFile(view, str(archive))
                sec = elf.first(SHT.SYMTAB)
                if sec is None:
                    return set()
                raw = elf.section_bytes(sec)
                strtab = elf.linked_strtab(sec)
            finally:
                view.release()
    except (OSError, ValueError, IndexError, PrebakeError):
        return set()
    st = elf.lay.sym
    out: set[str] = set()
    for st_name, info, _other, _shndx in st.iter_unpack(raw[: len(raw) - len(raw) % st.size]):
        if info >> 4 != STB_GNU_UNIQUE:
            continue
        end = strtab.find(b"\0", st_name)
        sym = strtab[st_name : end if end >= 0 else None].decode("utf-8", "replace")
        if sym in wanted:
            out.add(sym)
    return out


def _drop_unique(clashes: list[Clash], members: dict[tuple[str, str], Facts]) -> list[Clash]:
    """Clashes minus symbols some ELF definition marks ``STB_GNU_UNIQUE``."""
    by_member: dict[tuple[str, str], set[str]] = {}
    for c in clashes:
        for key in c.definitions:
            m = members.get(key)
            if m is not None and m.format == "elf" and isinstance(m.details.get("offset"), int):
                by_member.setdefault(key, set()).add(c.symbol)
    unique: set[str] = set()
    for key, names in by_member.items():
        m = members[key]
        archive = m.path[: m.path.rindex("(")] if m.path.endswith(")") else m.path
        unique |= gnu_unique(Path(archive), int(m.details["offset"]), names - unique)
    return [c for c in clashes if c.symbol not in unique]


def find_clashes(archives: Sequence[tuple[str, Facts]]) -> list[Clash]:
    """Strong symbols defined by more than one archive of the set, sorted by symbol."""
    where: dict[str, list[tuple[str, str]]] = {}
    members: dict[tuple[str, str], Facts] = {}
    for shown, facts in archives:
        for m in facts.members or []:
            members.setdefault((shown, member_name(m)), m)
        for sym, member in strong_definitions(facts).items():
            where.setdefault(sym, []).append((shown, member))
    clashes = [
        Clash(sym, tuple(defs))
        for sym, defs in sorted(where.items())
        if len({a for a, _ in defs}) > 1
    ]
    return _drop_unique(clashes, members) if clashes else clashes


def clash_violations(archives: Sequence[tuple[str, Facts]]) -> list[Violation]:
    """One violation per pair of archives that define the same strong symbols."""
    by_pair: dict[tuple[str, ...], list[Clash]] = {}
    for c in find_clashes(archives):
        by_pair.setdefault(tuple(c.archives()), []).append(c)
    out = []
    for pair, clashes in by_pair.items():
        names = [c.symbol for c in clashes]
        shown = ", ".join(names[:MAX_SHOWN]) + (
            f", … ({len(names) - MAX_SHOWN} more)" if len(names) > MAX_SHOWN else ""
        )
        detail = (
            f"clash: required each strong symbol defined once, found {len(names)} symbol(s) "
            f"defined in {' and '.join(pair)}: {shown}"
        )
        evidence = {
            f"{a}({m})": [c.symbol] for c in clashes[:MAX_SHOWN] for a, m in c.definitions
        }
        out.append(Violation("clash", "each strong symbol defined once",
                             f"{len(names)} duplicate symbol(s)", pair[0], list(pair[1:]),
                             detail, None, evidence))
    return out


def forbidden_exports(facts: Facts, patterns: Sequence[str]) -> list[str]:
    """Exports of a shared library (or module) matching any glob, mangled or demangled."""
    if facts.symbols is None:
        return []
    return matching_exports(facts.symbols.exports, patterns, macho=facts.format == "macho")
