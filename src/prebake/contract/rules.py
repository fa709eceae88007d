"""One small function per contract key, and the registry that maps keys to them.

Each rule looks at one *leaf* — an object, an archive member, a fat slice, or a linked image —
and returns a ``Finding`` (what it found and why) when that leaf breaks the rule, or ``None``.
``prebake.contract.check`` walks the files, runs every rule whose contract value is set, and
groups findings per file so a violation names every offending member at once.

Unknown facts (``None``) never produce a finding: prebake does not guess. The rule's ``unknown``
says when a leaf's fact could not be read; ``prebake.contract.check`` then fails closed unless
the contract names the key in ``allow_unknown``. A leaf that uses no exceptions
(``eh = "none"``) is compatible with every EH model, and a leaf that needs no C++ runtime is
compatible with every ``cxx_stdlib``.

Adding a rule: write ``def _rule_x(expected, leaf) -> Finding | None`` and its ``Rule`` under
the key's name in ``_BOUND``, for a key whose entry in ``prebake.abikeys.KEYS`` says
``rule=True``; ``RULES`` follows the table's order.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any

from prebake import abikeys, engines
from prebake.contract import producer_rule
from prebake.inspect.demangle import demangle
from prebake.inspect.facts import Facts

IMAGE_KINDS = ("shared-library", "executable", "module")
WASM_FORMATS = ("wasm",)
LTO_FORMATS = ("llvm-bitcode", "gcc-lto")
MAX_LISTED = 8  # names quoted per finding; the JSON keeps the count


@dataclass(frozen=True)
class Finding:
    """How one leaf breaks a rule: the value found and the evidence (symbols, members, libs)."""

    found: str
    evidence: list[str] = field(default_factory=list)


LeafCheck = Callable[[Any, Facts], "Finding | None"]


@dataclass(frozen=True)
class Rule:
    """A contract key's per-leaf check and how to phrase the expected value (``key`` is filled
    in from the table entry that names the rule)."""

    check: LeafCheck
    expected: Callable[[Any], str]
    # a fat Mach-O passes when *any* slice passes (it carries the wanted arch among others)
    any_slice: bool = False
    # True for a leaf the rule applies to but whose fact the inspector could not read: the
    # check fails closed on it unless the contract's allow_unknown names the key
    unknown: Callable[[Facts], bool] | None = None
    # the fact whose evidence explains an unknown (defaults to the key)
    fact: str | None = None
    key: str = ""
    # ``unknown`` that reads the contract's value too (the producer rule's allowances)
    unknown_for: Callable[[Any, Facts], bool] | None = None


# --- helpers -------------------------------------------------------------------------------


def version_tuple(v: str) -> tuple[int, ...]:
    """``"2.38"`` -> ``(2, 38)``; non-numeric parts sort as 0 so a bad value never crashes."""
    return tuple(int(p) if p.isdigit() else 0 for p in v.split("."))


def is_wasm(leaf: Facts) -> bool:
    return leaf.format in WASM_FORMATS or leaf.arch in ("wasm32", "wasm64")


def _ev(leaf: Facts, *facts: str) -> list[str]:
    out: list[str] = []
    for name in facts:
        out.extend(leaf.evidence.get(name, []))
    return out


def _names(names: Sequence[str]) -> str:
    shown = ", ".join(names[:MAX_LISTED])
    more = len(names) - MAX_LISTED
    return shown + (f", … ({more} more)" if more > 0 else "")


def _features(leaf: Facts) -> set[str] | None:
    """The wasm features a leaf declares or uses, with the boolean facts folded in."""
    feats = leaf.abi.wasm_features
    if feats is None and leaf.abi.simd128 is None and leaf.abi.relaxed_simd is None:
        return None
    out = {f for f in (feats or []) if not f.startswith("-")}
    out = {f[1:] if f.startswith("+") else f for f in out}
    if leaf.abi.simd128:
        out.add("simd128")
    if leaf.abi.relaxed_simd:
        out.add("relaxed-simd")
    return out


def _disallowed_features(leaf: Facts) -> set[str]:
    """Features an object marks as disallowed (``-shared-mem`` in ``target_features``)."""
    out = {f[1:] for f in (leaf.abi.wasm_features or []) if f.startswith("-")}
    for key in ("wasm_features_disallowed", "disallowed_features", "features_disallowed"):
        val = leaf.details.get(key)
        if isinstance(val, list | tuple | set):
            out.update(str(v).lstrip("-") for v in val)
    return out


# --- the rules -----------------------------------------------------------------------------


def _rule_equal(fact: str) -> LeafCheck:
    """os / arch / msvc_runtime / exec_stack: the leaf's value must equal the contract's."""

    def check(expected: Any, leaf: Facts) -> Finding | None:
        found = getattr(leaf, fact) if fact in ("os", "arch") else getattr(leaf.abi, fact)
        if found is None or found == expected:
            return None
        return Finding(_is(found), _ev(leaf, fact))

    return check


def _rule_eh(expected: str, leaf: Facts) -> Finding | None:
    found = leaf.abi.eh
    if found is None or found == expected or (found == "none" and expected != "mixed"):
        return None
    return Finding(found, _ev(leaf, "eh"))


def _rule_wasm_eh_encoding(expected: str, leaf: Facts) -> Finding | None:
    """A wasm binary holding the other encoding (or both) is refused: an engine that lacks it
    refuses the module at instantiation, and no linker says a word (docs/binary-formats.md
    §3.6). A binary without EH code (``none``) links into either."""
    if leaf.format not in WASM_FORMATS:
        return None
    found = leaf.abi.wasm_eh_encoding
    if found is None or found in (expected, "none"):
        return None
    return Finding(found, _ev(leaf, "wasm_eh_encoding"))


def _rule_lto(expected: str, leaf: Facts) -> Finding | None:
    found = leaf.abi.lto
    if found is None and leaf.format in LTO_FORMATS:
        found = leaf.format
    if found is None or found == expected:
        return None
    ev = _ev(leaf, "lto") or ([f"{leaf.format} object"] if leaf.format in LTO_FORMATS else [])
    return Finding(found, ev)


def _shared_mem_message(leaf: Facts) -> str:
    # the exact words wasm-ld prints (lld/wasm/Writer.cpp, checkFeatures)
    return (
        f"--shared-memory is disallowed by {leaf.member_name} because it was not compiled "
        "with 'atomics' or 'bulk-memory' features."
    )


def _rule_threads(expected: bool, leaf: Facts) -> Finding | None:
    if not is_wasm(leaf):
        return None
    if leaf.kind == "object":
        feats = _features(leaf)
        has = (feats is not None and {"atomics", "bulk-memory"} <= feats) or leaf.abi.threads
        if expected:
            if "shared-mem" in _disallowed_features(leaf):
                return Finding("no atomics/bulk-memory", [_shared_mem_message(leaf)])
            if not has and (feats is not None or leaf.abi.threads is False):
                missing = sorted({"atomics", "bulk-memory"} - (feats or set()))
                return Finding("no atomics/bulk-memory", [
                    "not compiled with " + " and ".join(f"'{m}'" for m in missing)
                    + " features (-pthread)"])
            return None
        if has:
            return Finding("atomics", ["compiled with -pthread ('atomics' feature)"])
        return None
    found = leaf.abi.threads
    if found is None or found == expected:
        return None
    ev = _ev(leaf, "threads") or [
        "memory is shared" if found else "memory is not shared (not linked with -pthread)"
    ]
    return Finding(str(found).lower(), ev)


def _rule_features_required(expected: Sequence[str], leaf: Facts) -> Finding | None:
    if not is_wasm(leaf):
        return None
    feats = _features(leaf)
    if feats is None:
        return None
    missing = [f for f in expected if f not in feats]
    if not missing:
        return None
    have = ", ".join(sorted(feats)) or "none"
    if leaf.abi.wasm_features_complete is False:  # the code may use what the list lacks
        have += " (partial: the code could not be read whole; its evidence says why)"
    return Finding(f"missing {', '.join(missing)}", [f"features: {have}"])


_FEATURE_FACTS = {"relaxed-simd": "relaxed_simd", "simd128": "simd128", "atomics": "threads"}


def _rule_features_forbidden(expected: Sequence[str], leaf: Facts) -> Finding | None:
    if not is_wasm(leaf):
        return None
    feats = _features(leaf)
    if feats is None:
        return None
    present = [f for f in expected if f in feats]
    if not present:
        return None
    ev = _ev(leaf, "wasm_features", *(_FEATURE_FACTS.get(f, f) for f in present))
    return Finding(", ".join(present), ev or [f"target_features +{f}" for f in present])


def _rule_engines(expected: Sequence[str], leaf: Facts) -> Finding | None:
    """Every named engine at its release must have every feature the leaf uses (the table of
    engines, ``prebake.engines``); the finding names each feature and engine, the evidence
    where the leaf uses it. A leaf whose feature list is partial is the rule's unknown."""
    need = engines.needs(leaf)
    if need is None:
        return None
    lacks = [lack for text in expected for lack in engines.judge(need, engines.parse_floor(text))]
    if not lacks:
        return None
    evidence: list[str] = []
    rows = engines.table().features
    for fid in dict.fromkeys(lack.feature for lack in lacks if lack.feature in rows):
        for reason in _engine_evidence(leaf, rows[fid]):
            if reason not in evidence:
                evidence.append(reason)
    return Finding("; ".join(lack.text() for lack in lacks), evidence)


def _engine_evidence(leaf: Facts, feature: engines.Feature) -> list[str]:
    """Where the leaf's facts say it uses ``feature``: the feature list's line for it, the
    exceptions' encoding, the loader's JSPI, the shared memory."""
    out = [r for r in leaf.evidence.get("wasm_features", [])
           if any(r.startswith(f"{name}:") for name in feature.wasm_features)]
    if feature.encoding:
        out += leaf.evidence.get("wasm_eh_encoding", [])[:1]
    if feature.async_:
        out += leaf.evidence.get("async", [])[:1]
    if "atomics" in feature.wasm_features:
        out += leaf.evidence.get("threads", [])[:1]
    return out


def _too_new_symbols(leaf: Facts, family: str, limit: str) -> list[str]:
    """``name@GLIBC_2.38`` for every versioned reference above ``limit`` (images)."""
    if leaf.symbols is None:
        return []
    out = []
    for name, ver in sorted(leaf.symbols.versions.items()):
        fam, _, num = ver.partition("_")
        if fam == family and num[:1].isdigit() and version_tuple(num) > version_tuple(limit):
            out.append(f"{name}@{ver}")
    return out


def _rule_version_max(fact: str, family: str) -> LeafCheck:
    """glibc_max / glibcxx_max: the highest required symbol version must not exceed the limit."""

    def check(expected: str, leaf: Facts) -> Finding | None:
        found = getattr(leaf.abi, fact)
        if found is None or version_tuple(found) <= version_tuple(expected):
            return None
        ev = _ev(leaf, fact)
        too_new = _too_new_symbols(leaf, family, expected)
        if too_new:
            ev = [*ev, f"references {_names(too_new)}"]
        return Finding(found, ev)

    return check


def _rule_cxx_stdlib(expected: str, leaf: Facts) -> Finding | None:
    found = leaf.abi.cxx_stdlib
    if found is None or found == expected or found == "none":
        return None
    return Finding(found, _ev(leaf, "cxx_stdlib"))


def _rule_macos_min(expected: str, leaf: Facts) -> Finding | None:
    found = leaf.abi.macos_min
    if found is None or version_tuple(found) <= version_tuple(expected):
        return None
    return Finding(found, _ev(leaf, "macos_min"))


def _lib_matches(name: str, patterns: Sequence[str]) -> bool:
    """Glob on the full name or its basename; DLL names compare case-insensitively."""
    base = PureWindowsPath(name).name if "\\" in name else PurePosixPath(name).name
    folded = name.lower().endswith(".dll")
    for pat in patterns:
        for cand in (name, base):
            c, p = (cand.lower(), pat.lower()) if folded else (cand, pat)
            if fnmatch.fnmatchcase(c, p):
                return True
    return False


def _rule_allowed_needed(expected: Sequence[str], leaf: Facts) -> Finding | None:
    """Load-time and delay-loaded libraries alike: a delay-loaded DLL is loaded on first
    call, so it must be there just the same (the evidence says which kind it is)."""
    deps = [(n, "needs") for n in leaf.needed or []]
    deps += [(n, "delay-loads") for n in leaf.delay_needed or []]
    extra = [(n, how) for n, how in deps if not _lib_matches(n, expected)]
    if not extra:
        return None
    return Finding(", ".join(n for n, _ in extra), [f"{how} {n}" for n, how in extra])


def _default_demangle() -> Callable[[str], str]:
    """The inspector's demangler, keeping a name it cannot demangle as it is."""
    return lambda name: demangle(name) or name


_MANGLED_PREFIX = re.compile(r"^(_Z|__Z|\?)")


def matching_exports(names: Sequence[str], patterns: Sequence[str], macho: bool) -> list[str]:
    """Names matching any glob, tried on the raw name, without Mach-O's ``_``, and demangled."""
    demangle = (
        _default_demangle() if any(not _MANGLED_PREFIX.match(p) for p in patterns) else None
    )
    compiled = [re.compile(fnmatch.translate(p)) for p in patterns]
    hits = []
    for name in names:
        cands = [name]
        if macho and name.startswith("_"):
            cands.append(name[1:])
        if demangle is not None and (name.startswith(("_Z", "__Z", "?"))):
            cands.append(demangle(cands[-1]))
        if any(rx.match(c) for rx in compiled for c in cands):
            hits.append(name)
    return hits


def _rule_forbid_exports(expected: Sequence[str], leaf: Facts) -> Finding | None:
    if leaf.kind not in IMAGE_KINDS or leaf.symbols is None:
        return None
    hits = matching_exports(leaf.symbols.exports, expected, macho=leaf.format == "macho")
    if not hits:
        return None
    return Finding(f"{len(hits)} forbidden export(s)", [f"exports {_names(hits)}"])


def _rule_producer(expected: producer_rule.Requirement, leaf: Facts) -> Finding | None:
    """Every compiler the leaf names is the platform's verified one (or a glob, or in a
    linked image its runtime's): ``prebake.contract.producer_rule``."""
    hit = producer_rule.judge(expected, leaf)
    return Finding(*hit) if hit is not None else None


def _is(v: Any) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)


def _wasm_features_unknown(f: Facts) -> bool:
    return is_wasm(f) and _features(f) is None


def _wasm_features_partial(f: Facts) -> bool:
    """A forbidden feature may hide in what was not read: a list whose code could not be read
    whole (``wasm_features_complete`` false) cannot show that a feature is absent."""
    return _wasm_features_unknown(f) or (is_wasm(f) and f.abi.wasm_features_complete is False)


# Each contract key's rule, under the key's name: the table of ABI keys says which keys have
# one (``rule=True``), and a key without its rule here, or a rule for no such key, fails at
# import (``_bound``).
_BOUND: Mapping[str, Rule] = {
    "os": Rule(_rule_equal("os"), _is, unknown=lambda f: f.os is None),
    "arch": Rule(_rule_equal("arch"), _is, any_slice=True, unknown=lambda f: f.arch is None),
    "eh": Rule(_rule_eh, _is, unknown=lambda f: f.abi.eh is None),
    "wasm_eh_encoding": Rule(
        _rule_wasm_eh_encoding, _is,
        unknown=lambda f: f.format in WASM_FORMATS and f.abi.wasm_eh_encoding is None),
    "lto": Rule(_rule_lto, _is,
                unknown=lambda f: f.abi.lto is None and f.format not in LTO_FORMATS),
    "glibc_max": Rule(_rule_version_max("glibc_max", "GLIBC"), lambda v: f"glibc <= {v}"),
    "glibcxx_max": Rule(_rule_version_max("glibcxx_max", "GLIBCXX"),
                        lambda v: f"GLIBCXX <= {v}"),
    "cxx_stdlib": Rule(_rule_cxx_stdlib, _is),
    "macos_min": Rule(_rule_macos_min, lambda v: f"macOS minimum <= {v}",
                      unknown=lambda f: f.format == "macho" and f.abi.macos_min is None),
    "msvc_runtime": Rule(_rule_equal("msvc_runtime"), lambda v: f"/{v}"),
    # an ELF binary without PT_GNU_STACK or .note.GNU-stack cannot say: fails closed
    "exec_stack": Rule(_rule_equal("exec_stack"), _is,
                       unknown=lambda f: f.format == "elf" and f.abi.exec_stack is None),
    "threads": Rule(_rule_threads, _is,
                    unknown=lambda f: is_wasm(f) and f.abi.threads is None
                    and _features(f) is None),
    # the value is the file's ``producer_rule.Requirement`` (``contract.check`` makes it from the
    # contract's entries, the verified toolchain's pin and the recipe's allowances)
    "producer": Rule(_rule_producer, lambda req: req.describe(),
                     unknown_for=producer_rule.undecided),
    "features_required": Rule(_rule_features_required, lambda v: ", ".join(v),
                              unknown=_wasm_features_unknown, fact="wasm_features"),
    "features_forbidden": Rule(_rule_features_forbidden, lambda v: "none of " + ", ".join(v),
                               unknown=_wasm_features_partial, fact="wasm_features"),
    "engines": Rule(_rule_engines, lambda v: "runs in " + ", ".join(v),
                    unknown=_wasm_features_partial, fact="wasm_features"),
    "allowed_needed": Rule(_rule_allowed_needed, lambda v: "only " + ", ".join(v),
                           unknown=lambda f: f.kind in IMAGE_KINDS and f.needed is None,
                           fact="needed"),
    "forbid_exports": Rule(_rule_forbid_exports, lambda v: "no exports matching " + ", ".join(v),
                           unknown=lambda f: f.kind in IMAGE_KINDS and f.symbols is None,
                           fact="symbols"),
}


def _bound() -> tuple[Rule, ...]:
    """Every contract key's rule, in the table's order, with its key filled in."""
    keys = [k.name for k in abikeys.contract_keys() if k.rule]
    if set(keys) != set(_BOUND):
        raise LookupError(
            "the rules bound in prebake.contract.rules and the contract keys with a rule in "
            f"prebake.abikeys.KEYS differ: {sorted(set(keys) ^ set(_BOUND))}")
    return tuple(replace(_BOUND[name], key=name) for name in keys)


RULES: tuple[Rule, ...] = _bound()
RULES_BY_KEY: Mapping[str, Rule] = {r.key: r for r in RULES}
