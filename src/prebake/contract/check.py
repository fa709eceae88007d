"""Facts vs contract: run every rule over files, folders and assets; name each violation.

``check_paths`` accepts whatever ``prebake.inspect.resolve`` does: binaries, folders (every
binary anywhere below them, symlinks followed inside the tree, one leaving it is a violation),
release assets and upstream packages (``.tar.xz``, npm ``.tgz``, PyPI ``.whl``, ``.zip`` …,
unpacked safely into a temporary folder).
Rules run per leaf (object, archive member, fat slice, image) and findings are grouped per file,
so one violation lists every offending member with its evidence:

    eh: required wasm, found emscripten-legacy in 3 of 41 members: session.o (references …), …

Besides the contract's rules, a set holding several static archives is checked for strong
symbols defined by more than one archive (``prebake.contract.clash``): two copies of protobuf in
one link are an ODR violation the linker may not report.
"""

from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from prebake import abikeys
from prebake.contract import producer_rule
from prebake.contract.clash import clash_violations
from prebake.contract.findings import (
    MAX_EVIDENCE_SHOWN,
    MAX_MEMBERS_SHOWN,
    CheckReport,
    Unknown,
    Violation,
)
from prebake.contract.rules import RULES, Finding, Rule
from prebake.contract.terms import Contract
from prebake.errors import FormatError, PrebakeError
from prebake.inspect import ParseOptions, inspect
from prebake.inspect.facts import Facts
from prebake.inspect.resolve import resolve

InspectFn = Callable[[Path], Facts]

__all__ = ["CheckReport", "InspectFn", "Unknown", "Violation", "check_facts", "check_paths",
           "unknown_facts"]


# --- grouping findings into violations ------------------------------------------------------


def _leaves(facts: Facts) -> tuple[list[Facts], bool]:
    """The units rules look at, and whether they are members/slices of ``facts``."""
    if facts.members is not None:
        out: list[Facts] = []
        for m in facts.members:
            if m.error is not None:
                continue
            out.extend(_leaves(m)[0] if (m.members or m.slices) else [m])
        return out, True
    if facts.slices:
        return [s for s in facts.slices if s.error is None], True
    return [facts], False


def _evidence_text(reasons: list[str]) -> str:
    shown = reasons[:MAX_EVIDENCE_SHOWN]
    more = len(reasons) - len(shown)
    return "; ".join(shown) + (f"; … ({more} more)" if more > 0 else "")


def _violation(rule: Rule, value: Any, path: str, hits: list[tuple[str, Finding]],
               total: int | None) -> Violation:
    expected = rule.expected(value)
    counts = Counter(f.found for _, f in hits)
    found = "; ".join(v for v, _ in counts.most_common())
    detail = f"{rule.key}: required {expected}, found {found}"
    members = [name for name, _ in hits] if total is not None else []
    evidence = {name: f.evidence for name, f in hits if f.evidence}
    if total is not None:
        parts = []
        for name, f in hits[:MAX_MEMBERS_SHOWN]:
            ev = _evidence_text(f.evidence)
            parts.append(f"{name} ({ev})" if ev else name)
        more = len(hits) - MAX_MEMBERS_SHOWN
        unit = "members" if total != 1 else "member"
        detail += f" in {len(hits)} of {total} {unit}: " + ", ".join(parts)
        if more > 0:
            detail += f", … ({more} more)"
    elif hits and hits[0][1].evidence:
        detail += f" ({_evidence_text(hits[0][1].evidence)})"
    return Violation(rule.key, expected, found, path, members, detail, total, evidence)


def _rule_value(contract: Contract, rule: Rule, pin: producer_rule.ProducerPin | None = None,
                path: str = "") -> Any:
    """The contract's value for the rule, or None when the key sets no rule (an empty list
    does not, unless the table says an empty list is a rule of its own: allowed_needed).
    ``producer``'s value is the file's requirement (None: the contract asks for the verified
    toolchain and no pin says what it is; ``check_paths`` reports that undecided)."""
    value = getattr(contract, rule.key)
    if abikeys.BY_NAME[rule.key].empty_rule:
        return value  # () means "nothing may be"
    if rule.key == PRODUCER and value:
        return producer_rule.requirement(value, pin, path)
    return value if value not in (None, ()) else None


PRODUCER = "producer"


def _unreadable(facts: Facts, shown: str) -> list[Violation]:
    """Members and slices that could not be read: no rule can be checked on them, so the file
    fails (fail closed) rather than passing on the members that could be read. Members whose
    bytes are no binary at all (``details["not_binary"]``: a text file added with ``ar q``)
    hold no code a linker would use and are not counted."""
    bad = [m for m in facts.walk()[1:]
           if m.error is not None and not m.details.get("not_binary")]
    if not bad:
        return []
    names = [m.member_name for m in bad]
    shown_n = [f"{n} ({m.error})" for n, m in zip(names, bad, strict=True)][:MAX_MEMBERS_SHOWN]
    more = len(bad) - len(shown_n)
    total = len(facts.walk()) - 1
    detail = (f"inspect: {len(bad)} of {total} members could not be read, so no rule can be "
              "checked on them: " + ", ".join(shown_n) + (f", … ({more} more)" if more > 0 else ""))
    return [Violation("inspect", "a readable binary", "unreadable", shown, names, detail, total,
                      {n: [m.error or ""] for n, m in zip(names, bad, strict=True)})]


def check_facts(facts: Facts, contract: Contract, path: str | None = None,
                pin: producer_rule.ProducerPin | None = None) -> list[Violation]:
    """Violations of one inspected file (its members and slices included); ``pin`` is the
    verified toolchain the ``producer`` rule holds it to."""
    shown = path or facts.path
    leaves, nested = _leaves(facts)
    total = len(leaves) if nested else None
    out: list[Violation] = _unreadable(facts, shown)
    for rule in RULES:
        value = _rule_value(contract, rule, pin, shown)
        if value is None:
            continue
        if (rule.any_slice and facts.slices and not facts.members
                and any(rule.check(value, s) is None for s in leaves)):
            continue
        hits = []
        for leaf in leaves:
            finding = rule.check(value, leaf)
            if finding is not None:
                hits.append((leaf.member_name if nested else shown, finding))
        if hits:
            out.append(_violation(rule, value, shown, hits, total))
    return out


def unknown_facts(facts: Facts, contract: Contract, path: str | None = None,
                  pin: producer_rule.ProducerPin | None = None) -> list[Unknown]:
    """Rules of ``contract`` that some leaves of ``facts`` could not be checked against, with
    the inspector's reason (its evidence for the missing fact) and whether the contract's
    ``allow_unknown`` accepts that."""
    shown = path or facts.path
    leaves, nested = _leaves(facts)
    out = []
    for rule in RULES:
        value = _rule_value(contract, rule, pin, shown)
        if (rule.unknown is None and rule.unknown_for is None) or value is None:
            continue
        undecided = [leaf for leaf in leaves if (
            rule.unknown_for(value, leaf) if rule.unknown_for is not None
            else rule.unknown is not None and rule.unknown(leaf))]
        if undecided:
            names = [leaf.member_name if nested else shown for leaf in undecided]
            reasons = [r for leaf in undecided for r in leaf.evidence.get(rule.fact or rule.key, [])
                       if r]
            out.append(Unknown(rule.key, shown, names if nested else [],
                               len(leaves) if nested else None,
                               allowed=rule.key in contract.allow_unknown,
                               reason=reasons[0] if reasons else "no evidence either way"))
    return out


# --- finding the binaries: prebake.inspect.resolve, the one resolver ------------------------


def _default_inspect(path: Path, deep: bool = False, root: Path | None = None) -> Facts:
    return inspect(path, ParseOptions(symbols=True, deep=deep,
                                      root=str(root) if root is not None else None))


def wants_deep(contract: Contract) -> bool:
    """Whether a contract asks for the deep read. Every wasm instruction is decoded on the
    default path now, so feature lists are whole without it; a feature rule keeps asking for
    it, which adds only the per-family counts to the details."""
    return bool(contract.features_forbidden)


def check_paths(paths: Sequence[Path], contract: Contract, *,
                inspect_fn: InspectFn | None = None, deep: bool = False,
                pin: producer_rule.ProducerPin | None = None,
                no_pin: str = "no verified toolchain was given to hold it to") -> CheckReport:
    """Check files, folders and assets against ``contract``; every violation at once.

    Raises ``PrebakeError``/``FormatError`` (exit 2) for a named path that is missing or not a
    binary; a broken binary found inside a folder or asset is reported as a violation instead.
    ``deep`` decodes every wasm instruction, so feature lists are whole (``--deep``). ``pin``
    is the verified toolchain ``producer = ["toolchain"]`` holds every binary to; without
    one that rule is undecided for every file (``no_pin`` says why).
    """
    report = CheckReport(contract)

    with tempfile.TemporaryDirectory(prefix="prebake-check-") as tmp:
        found = resolve(list(paths), Path(tmp))
        report.skipped.extend(found.skipped)
        for esc in found.escapes:
            report.violations.append(Violation(
                "symlink", "a link inside the tree", "a link leaving it", esc.split(" -> ")[0],
                [], f"symlink: points outside the tree it ships in ({esc}); not followed"))
        for shown, why in found.unreadable:
            # what could not be looked at may hold code a linker would use: never passed over
            report.violations.append(Violation(
                "inspect", "a readable binary", "unreadable", shown, [], f"inspect: {why}"))
        targets = found.binaries
        if not targets and not found.escapes and not found.unreadable:
            raise PrebakeError(
                f"{', '.join(str(p) for p in paths)}: no binaries found to check"
            )
        archives: list[tuple[str, Facts]] = []
        for t in targets:
            try:
                # a binary found in a tree is read with that tree as the bound of what it
                # may name (a thin archive's members)
                facts = (_default_inspect(t.path, deep, t.root) if inspect_fn is None
                         else inspect_fn(t.path))
                if facts.error is not None:
                    raise FormatError(str(t.path), facts.error)
            except FormatError as exc:
                if t.explicit:
                    raise
                report.files.append(t.shown)
                report.violations.append(Violation(
                    "inspect", "a readable binary", "unreadable", t.shown, [],
                    f"inspect: {exc.reason}"))
                continue
            report.files.append(t.shown)
            report.violations.extend(check_facts(facts, contract, t.shown, pin))
            report.unknown.extend(unknown_facts(facts, contract, t.shown, pin))
            if facts.kind == "static-library" and facts.members is not None:
                archives.append((t.shown, facts))
        if len(archives) > 1:
            report.violations.extend(clash_violations(archives))
        if contract.allowed_licenses:
            # no binary says which license it was built under: the build judges a recipe's
            # license proven from its libraries (bake.guards), fetch the manifest's record
            report.unknown.extend(Unknown(
                "allowed_licenses", f, [], None, "allowed_licenses" in contract.allow_unknown,
                "a binary alone does not state its license; the build and fetch judge the "
                "license its recipe proved") for f in report.files)
        if producer_rule.TOOLCHAIN in contract.producer and pin is None:
            report.unknown.extend(Unknown(
                PRODUCER, f, [], None, PRODUCER in contract.allow_unknown,
                f"the contract holds producers to the platform's verified toolchain, and "
                f"{no_pin}") for f in report.files)
        if found.labels:
            for v in report.violations:
                v.detail = found.relabel(v.detail)
                v.evidence = {k: [found.relabel(e) for e in ev] for k, ev in v.evidence.items()}
            for u in report.unknown:
                u.reason = found.relabel(u.reason)
    return report
