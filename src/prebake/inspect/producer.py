"""What compiled a binary, read from its own bytes: each format's producer records, as one fact.

Every format that records its compiler does it in text of its own (docs/binary-formats.md,
"Producers"): ELF's ``.comment`` (``GCC: (Debian 12.2.0-14+deb12u1) 12.2.0``, ``Debian clang
version 14.0.6``, ``Linker: LLD 22.1.8``), the wasm ``producers`` section (``processed-by``
``Debian clang`` ``21.1.8 (14)``, ``sdk`` ``Emscripten``), a MinGW COFF object's
``.rdata$zzz``, CodeView's ``S_COMPILE3`` (``clang version 22.1.8``), LLVM bitcode's
IDENTIFICATION block (``LLVM14.0.6``), Mach-O's ``LC_BUILD_VERSION`` tools. The readers hand
their texts here with where they found them; ``record`` turns each into ``tool release``
(``gcc 12.2.0``) by the table below, keeps linkers and optimisers apart (they compile nothing),
and leaves the fact ``None``, with the reason, when the binary says nothing a compiler wrote.
A text no row reads is evidence, never a guess.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from prebake.inspect.facts import Facts

MAX_TEXTS = 32  # distinct records kept per binary (a hostile .comment may hold thousands)
MAX_TEXT = 160  # characters of one record kept for evidence
_REL = r"(\d+(?:\.\d+)*)"


@dataclass(frozen=True, slots=True)
class Producer:
    """One record read: the tool, its release, and whether it compiled code."""

    tool: str
    release: str
    compiler: bool = True

    @property
    def label(self) -> str:
        return f"{self.tool} {self.release}"


# (pattern, tool or None for the pattern's own ``tool`` group, compiler?) — first match wins.
_ROWS: tuple[tuple[re.Pattern[str], str | None, bool], ...] = (
    # GCC's .ident: "GCC: (vendor) 12.2.0", MinGW's "GCC: (GNU) 12-win32"
    (re.compile(r"^GCC: \([^)]*\) " + _REL), "gcc", True),
    # lld's own .comment line, mold's and gold's
    (re.compile(r"^Linker: (?:\S+ )*?(?P<tool>LLD|mold|GNU gold|gold) " + _REL), None, False),
    (re.compile(r"^(?P<tool>mold) " + _REL), None, False),
    (re.compile(r"\bApple (?:clang|LLVM) version " + _REL), "appleclang", True),
    (re.compile(r"\bclang version " + _REL), "clang", True),
    # LLVM bitcode's IDENTIFICATION string: "LLVM14.0.6", Apple's "APPLE_1_1500.3.9.4_0"
    (re.compile(r"^LLVM" + _REL), "llvm", True),
    (re.compile(r"^APPLE_\d+_" + _REL), "appleclang", True),
    # Emscripten's sdk field
    (re.compile(r"^Emscripten " + _REL, re.IGNORECASE), "emscripten", True),
    (re.compile(r"^rustc(?: version)? " + _REL), "rustc", True),
    # cl.exe's CodeView compile record, its front-end version appended (coff._compile_record)
    (re.compile(r"^Microsoft \(R\) Optimizing Compiler " + _REL), "msvc", True),
)
# processed-by tools of the wasm producers section that rewrite a module, not compile it
_PROCESSORS = frozenset({"wasm-ld", "lld", "binaryen", "wasm-opt", "wasm-bindgen", "walrus",
                         "wasm-tools"})
_CLANG_WORD = re.compile(r"(?:^|\s)clang$")


def parse(text: str) -> Producer | None:
    """The tool and release a record names, or None when no row of the table reads it."""
    for rx, tool, compiler in _ROWS:
        m = rx.search(text)
        if m is not None:
            name = tool or m.group("tool").lower().removeprefix("gnu ")
            return Producer(name, m.group(m.lastindex or 1), compiler)
    return None


def parse_wasm(field: str, name: str, version: str) -> Producer | None:
    """One (name, version) of the wasm producers section (ProducersSection.md): ``sdk`` and
    ``processed-by`` name tools; ``language`` names source languages, no tool."""
    if field == "language":
        return None
    release = re.search(_REL, version)
    if release is None:
        return None
    word = name.strip()
    if _CLANG_WORD.search(word):  # "Debian clang", "clang", "Homebrew clang"
        return Producer("appleclang" if word.startswith("Apple") else "clang", release.group(1))
    tool = word.split()[-1].lower() if word else ""
    if not tool:
        return None
    return Producer(tool, release.group(1), tool not in _PROCESSORS)


def texts_of(raw: bytes) -> list[str]:
    """The NUL-separated records of a ``.comment``-like section, first seen first, each once
    (a linked image repeats nothing; a hand-made section may), at most ``MAX_TEXTS``."""
    out: dict[str, None] = {}
    for piece in raw.split(b"\0"):
        text = piece.decode("utf-8", "replace").strip()
        if text:
            out.setdefault(text[:MAX_TEXT])
            if len(out) >= MAX_TEXTS:
                break
    return list(out)


@functools.lru_cache(maxsize=64)
def parsed(raw: bytes) -> tuple[tuple[str, Producer | None], ...]:
    """``texts_of`` and ``parse`` of a section's bytes, remembered (at most 64 sections of at
    most ``elf.MAX_COMMENT`` bytes): the members of an archive built by one compiler carry the
    same few bytes each, and parsing them again was 7 % of reading such an archive's facts."""
    return tuple((t, parse(t)) for t in texts_of(raw))


def record(facts: Facts, found: Sequence[tuple[str, str, Producer | None]], *,
           absent: str) -> None:
    """Set ``abi.producer`` from ``(where, text, parsed)`` records and note each as evidence
    (``.comment 'GCC: (…) 12.2.0'``); linkers and optimisers go to ``details["linkers"]``.
    ``absent`` is the evidence when the binary holds no record at all."""
    compilers: dict[str, None] = {}
    linkers: dict[str, None] = {}
    for where, text, p in found[:MAX_TEXTS]:
        shown = f"{where} {text[:MAX_TEXT]!r}"
        if p is None:
            facts.note("producer", f"{shown}: no producer this reader knows")
        elif p.compiler:
            compilers.setdefault(p.label)
            facts.note("producer", shown)
        else:
            linkers.setdefault(p.label)
            facts.note("producer", f"{shown} (a linker or optimiser, not a compiler)")
    if compilers:
        facts.abi.producer = sorted(compilers)
    if linkers:
        facts.details["linkers"] = sorted(linkers)
    if not found:
        facts.note("producer", absent)
    elif not compilers:
        facts.note("producer", "no record names a compiler")

