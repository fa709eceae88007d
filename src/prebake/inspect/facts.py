"""The facts the inspector reads from a binary, with the stable JSON names of
schemas/inspect.schema.json.

Unknown facts stay ``None`` (JSON ``null``): prebake never guesses. Parsers also record
*evidence* per fact (why ``eh`` is ``emscripten-legacy``: "references __resumeException"), which
the guards quote in violations so a user sees the member and symbol that break a rule.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from prebake import abikeys
from prebake.abikeys import ARCHES, EH_MODELS, FORMATS, KINDS, LTO_KINDS, OSES

__all__ = ["ABI_FIELDS", "ARCHES", "EH_MODELS", "FACT_FIELDS", "FORMATS", "KINDS", "LTO_KINDS",
           "OSES", "SYMBOL_LISTS", "Abi", "Facts", "Symbols"]

Format = str  # elf | macho | macho-fat | pe | coff | wasm | llvm-bitcode | gcc-lto | archive
Kind = str  # object | static-library | shared-library | executable | module | import-library


@dataclass(slots=True)  # slots: an archive of 100 000 members holds 100 000 of these
class Abi:
    """ABI facts; every field is ``None`` until a parser has evidence for it.

    One attribute per ``abi`` entry of ``prebake.abikeys.KEYS``, generated from the table
    (which says its JSON name, values, how archive members combine and its meaning): add a
    fact there, then ``python -m prebake.reference``."""

    # ---- generated from prebake.abikeys.KEYS by `python -m prebake.reference` ----
    eh: str | None = None
    wasm_eh_encoding: str | None = None
    lto: str | None = None
    glibc_max: str | None = None
    glibcxx_max: str | None = None
    cxx_stdlib: str | None = None
    macos_min: str | None = None
    macos_sdk: str | None = None
    msvc_runtime: str | None = None
    threads: bool | None = None
    simd128: bool | None = None
    relaxed_simd: bool | None = None
    async_: str | None = None
    wasm_features: list[str] | None = None
    wasm_features_complete: bool | None = None
    exec_stack: bool | None = None
    producer: list[str] | None = None
    # ---- end of the generated fields ----

    def to_json(self) -> dict[str, Any]:
        return {name: getattr(self, attr) for name, attr in ABI_FIELDS}


# The ABI facts: (JSON name, attribute), in the order the human view lists them.
ABI_FIELDS = tuple((k.name, k.attribute) for k in abikeys.abi_facts())
# The facts every result has, in ``inspect --json`` (``abi`` is ``ABI_FIELDS``); the human
# view's title is the first four after the path.
FACT_FIELDS = ("path", "format", "kind", "os", "arch", "abi", "needed", "delay_needed", "soname",
               "size", "evidence", "details")
SYMBOL_LISTS = ("defined", "undefined", "exports")  # with --symbols


@dataclass
class Symbols:
    """Symbol names exactly as stored in the binary (mangled; Mach-O names keep their ``_``).

    ``defined``: every defined global/weak symbol (objects, archives' members, images).
    ``undefined``: every reference the binary needs from elsewhere.
    ``exports``: what a shared library/module makes visible to others (dynsym, export trie,
    export directory, wasm exports). For objects it equals ``defined`` minus hidden ones.
    ``weak``: the subset of ``defined`` that is weak (does not clash with a strong definition).
    ``versions``: for ELF images, undefined name -> required version (``GLIBC_2.28``).
    ``export_versions``: for ELF images, export -> the version node it is defined in
    (``av_add_q`` -> ``LIBAVUTIL_59``): a consumer's reference records the node, so moving an
    export to another node breaks it like removing it (what ``abidiff`` counts as removed).
    ``functions``: the exports that are code (``STT_FUNC``/``STT_GNU_IFUNC``), the rest being
    data — the split ``abidiff`` reports; ``None`` where the format does not say.
    """

    defined: list[str] = field(default_factory=list)
    undefined: list[str] = field(default_factory=list)
    exports: list[str] = field(default_factory=list)
    weak: set[str] = field(default_factory=set)
    versions: dict[str, str] = field(default_factory=dict)
    export_versions: dict[str, str] = field(default_factory=dict)
    functions: set[str] | None = None


@dataclass(slots=True)
class Facts:
    """What one file (or archive member, or fat slice) is."""

    path: str
    format: str | None = None
    kind: str | None = None
    os: str | None = None
    arch: str | None = None
    abi: Abi = field(default_factory=Abi)
    needed: list[str] | None = None  # load-time dependencies only
    # PE delay-loaded DLLs: loaded on first call, not at load time (None: not a PE image)
    delay_needed: list[str] | None = None
    soname: str | None = None
    size: int | None = None
    members: list[Facts] | None = None
    slices: list[Facts] | None = None
    symbols: Symbols | None = None
    # fact name -> human reasons ("references __resumeException, invoke_vii")
    evidence: dict[str, list[str]] = field(default_factory=dict)
    # for archives: fact name -> value -> number of members ({"eh": {"wasm": 3, "none": 38}})
    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    # format-specific details that are useful but not part of the stable contract
    details: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    @property
    def member_name(self) -> str:
        """``libx.a(session.o)`` -> ``session.o``; a plain path -> its file name."""
        p = self.path
        if p.endswith(")") and "(" in p:
            return p[p.rindex("(") + 1 : -1]
        return PurePosixPath(p.replace("\\", "/")).name or p

    def summary(self, rel: str) -> dict[str, Any]:
        """The contract-relevant facts of one shipped library, as the manifest records them
        (``prebake.manifest``): no per-member detail, no evidence."""
        return {
            "path": rel,
            "format": self.format,
            "kind": self.kind,
            "os": self.os,
            "arch": self.arch,
            "abi": self.abi.to_json(),
            "needed": self.needed,
            "delay_needed": self.delay_needed,
            "soname": self.soname,
            "members": len(self.members) if self.members is not None else None,
        }

    def note(self, fact: str, reason: str) -> None:
        self.evidence.setdefault(fact, []).append(reason)

    def native_eh(self, hits: list[str], landing_pads: str | None) -> bool:
        """Set ``eh = "native"`` when EH runtime names are referenced or a landing-pad section
        (``landing_pads``, e.g. ``.gcc_except_table``) exists; the same evidence wording for
        every native format. Returns whether it did; deciding "none" is the reader's call."""
        if not hits and not landing_pads:
            return False
        self.abi.eh = "native"
        if hits:
            self.note("eh", "references " + ", ".join(hits))
        if landing_pads:
            self.note("eh", f"has {landing_pads} (landing pads)")
        return True

    def walk(self) -> list[Facts]:
        """This file and every member/slice below it, depth first."""
        out = [self]
        for child in (self.members or []) + (self.slices or []):
            out.extend(child.walk())
        return out

    def to_json(self, *, symbols: bool = False, demangle: Any = None,
                children: bool = True) -> dict[str, Any]:
        """The stable ``inspect --json`` object; ``demangle`` maps a name to its demangled form.

        ``children=False`` leaves out ``members`` and ``slices`` (a streaming writer emits them
        one by one)."""
        out: dict[str, Any] = {name: getattr(self, name) for name in FACT_FIELDS}
        out["abi"] = self.abi.to_json()
        if self.counts:
            out["counts"] = self.counts
        if self.error is not None:
            out["error"] = self.error
        if self.members is not None and children:
            out["members"] = [m.to_json(symbols=symbols, demangle=demangle) for m in self.members]
        if self.slices is not None and children:
            out["slices"] = [s.to_json(symbols=symbols, demangle=demangle) for s in self.slices]
        if symbols:
            sy = self.symbols
            for key in SYMBOL_LISTS:
                names: list[str] = getattr(sy, key) if sy is not None else []
                out[key] = [
                    {"name": n, "demangled": demangle(n) if demangle else None} for n in names
                ] if sy is not None else None
        return out
