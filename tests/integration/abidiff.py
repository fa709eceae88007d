"""``abidiff`` (libabigail, Debian's ``abigail-tools``) run and read, as the reference
``prebake diff`` is compared with on ELF shared libraries.

What it prints, for two libraries with no debug info (what an asset ships: FFmpeg strips at
install), after ``SONAME changed from 'libavcodec.so.61' to 'libavcodec.so.62'``:
``N Removed function symbols not referenced by debug info:`` then ``  [D] name@@NODE`` lines,
and the same for ``Added`` (``[A]``) and for ``variable symbol(s)``. With debug info the
sections are ``N Removed functions:`` and each line ends in ``{name@@NODE}``; both are read.
A symbol is identified by name *and* version node: an export moved from ``LIBAVCODEC_61`` to
``LIBAVCODEC_62`` is listed as removed (its old identity is gone), and not as added (its name
was there before) — so abidiff's removed set is prebake's removed names plus its re-versioned
ones, and abidiff's added set is prebake's added names.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

_SECTION = re.compile(r"^\d+ (Removed|Added|Changed) (function|variable)s?"
                      r"(?: symbols? not referenced by debug info)?:$")
_SYMBOL = re.compile(r"^\s+\[[ADC]\] (?:'.*'\s+\{)?([^\s{},@]+)(@@?)([^\s{},]+)?")
_SONAME = re.compile(r"^SONAME changed from '([^']*)' to '([^']*)'$")


@dataclass
class AbiDiff:
    """abidiff's verdict on one pair: the soname change and each section's symbols as
    ``(name, node)``; ``rc`` is its exit code (bit 3: an incompatible change)."""

    rc: int
    text: str
    soname: tuple[str, str] | None = None
    symbols: dict[tuple[str, str], set[tuple[str, str]]] = field(default_factory=dict)

    def of(self, change: str, kind: str) -> set[tuple[str, str]]:
        """``change`` Removed/Added, ``kind`` function/variable."""
        return self.symbols.get((change, kind), set())


def abidiff(old: Path, new: Path) -> AbiDiff:
    proc = subprocess.run(["abidiff", "--no-show-locs", str(old), str(new)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode & 1 == 0, f"abidiff failed ({proc.returncode}): {proc.stderr}"
    out = AbiDiff(proc.returncode, proc.stdout)
    section: tuple[str, str] | None = None
    for line in proc.stdout.splitlines():
        if m := _SONAME.match(line):
            out.soname = (m[1], m[2])
        elif m := _SECTION.match(line):
            section = (m[1], m[2])
            out.symbols.setdefault(section, set())
        elif section is not None and (m := _SYMBOL.match(line)):
            out.symbols[section].add((m[1], m[3] or ""))
        elif line and not line.startswith(" "):
            section = None
    return out


def prebake_view(payload: dict[str, object], library: str) -> dict[tuple[str, str],
                                                                   set[tuple[str, str]]]:
    """``prebake diff --json``'s changes to one library in abidiff's terms (see the module
    doc): Removed = the exports gone by name and those moved to another node, each with its
    old node; Added = the exports new by name with their node; per function/variable."""
    out: dict[tuple[str, str], set[tuple[str, str]]] = {}
    changes = payload["changes"]
    assert isinstance(changes, list)
    for c in changes:
        if c["library"] != library or c["category"] not in ("export", "symbol-version"):
            continue
        added = c["category"] == "export" and c["reason"] == "export added"
        key = ("Added" if added else "Removed", c["kind"])
        out.setdefault(key, set()).add((c["subject"], (c["new"] if added else c["old"]) or ""))
    return out
