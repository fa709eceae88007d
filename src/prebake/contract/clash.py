"""Symbol clashes a linker may not report.

(a) A strong symbol defined by more than one static archive of a set (two copies of protobuf):
    GNU ld takes whichever archive it scans first and the program silently mixes versions.
(b) A shared library exporting third-party namespaces (``_ZN6google8protobuf*``, ``_ZN4absl*``):
    it interposes on, or is interposed by, the host's own copy. That rule is data
    (``forbid_exports``); this module gives the same matching to callers without a contract.

A symbol every definition of which is the same member bytes (FFmpeg compiles
``libavutil/half2float.c`` into libavcodec and libswscale alike: ``ff_init_half2float_tables``,
one object, byte for byte, in each static archive) is no clash: whichever archive the linker
scans first, the program gets the same code. The bytes are compared, never assumed.

Weak definitions (C++ inline functions, templates, COMDAT) legitimately repeat and are ignored,
and so are COFF members, whose COMDAT definitions look strong in the symbol table. ELF
``STB_GNU_UNIQUE`` definitions (static data of templates, merged by the linker) are in
``Symbols.weak`` for the same reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from prebake.contract.findings import Violation
from prebake.inspect.archive import member_digests
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
        name = m.member_name
        for sym in m.symbols.defined:
            if sym not in weak:
                out.setdefault(sym, name)
    return out


def find_clashes(archives: Sequence[tuple[str, Facts]]) -> list[Clash]:
    """Strong symbols defined by more than one archive of the set, sorted by symbol."""
    where: dict[str, list[tuple[str, str]]] = {}
    for shown, facts in archives:
        for sym, member in strong_definitions(facts).items():
            where.setdefault(sym, []).append((shown, member))
    paths = {shown: facts.path for shown, facts in archives}
    read: dict[str, dict[str, list[str]] | None] = {}  # each archive's members hashed once
    return [
        Clash(sym, tuple(defs))
        for sym, defs in sorted(where.items())
        if len({a for a, _ in defs}) > 1 and not _one_member(defs, paths, read)
    ]


def _one_member(defs: Sequence[tuple[str, str]], paths: dict[str, str],
                read: dict[str, dict[str, list[str]] | None]) -> bool:
    """Whether every definition is the same member bytes (see the module's docstring); a
    member whose name its archive uses twice, or a thin or unreadable archive, cannot be."""
    seen = set()
    for archive, member in defs:
        if archive not in read:
            read[archive] = member_digests(paths[archive])
        found = (read[archive] or {}).get(member, [])
        seen.add(found[0] if len(found) == 1 else None)
    return len(seen) == 1 and None not in seen


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
