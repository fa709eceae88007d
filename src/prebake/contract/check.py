"""Facts vs contract: run every rule over files, folders and assets; name each violation.

``check_paths`` accepts binaries, folders (only ``lib/`` when the folder has one, else the whole
folder; non-binaries are skipped) and ``.tar.xz`` assets (unpacked to a temporary folder).
Rules run per leaf (object, archive member, fat slice, image) and findings are grouped per file,
so one violation lists every offending member with its evidence:

    eh: required wasm, found emscripten-legacy in 3 of 41 members: session.o (references …), …

Besides the contract's rules, a set holding several static archives is checked for strong
symbols defined by more than one archive (``prebake.contract.clash``): two copies of protobuf in
one link are an ODR violation the linker may not report.
"""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prebake.contract.model import Contract
from prebake.contract.report import (
    MAX_EVIDENCE_SHOWN,
    MAX_MEMBERS_SHOWN,
    CheckReport,
    Unknown,
    Violation,
)
from prebake.contract.rules import RULES, Finding, Rule, member_name
from prebake.errors import FormatError, PrebakeError
from prebake.inspect.facts import Facts

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


def _rule_value(contract: Contract, rule: Rule) -> Any:
    value = getattr(contract, rule.key)
    if rule.key == "allowed_needed":
        return value  # () means "nothing may be needed"
    return value if value not in (None, ()) else None


def check_facts(facts: Facts, contract: Contract, path: str | None = None) -> list[Violation]:
    """Violations of one inspected file (its members and slices included)."""
    shown = path or facts.path
    leaves, nested = _leaves(facts)
    total = len(leaves) if nested else None
    out: list[Violation] = []
    for rule in RULES:
        value = _rule_value(contract, rule)
        if value is None:
            continue
        if (rule.any_slice and facts.slices and not facts.members
                and any(rule.check(value, s) is None for s in leaves)):
            continue
        hits = []
        for leaf in leaves:
            finding = rule.check(value, leaf)
            if finding is not None:
                hits.append((member_name(leaf) if nested else shown, finding))
        if hits:
            out.append(_violation(rule, value, shown, hits, total))
    return out


def unknown_facts(facts: Facts, contract: Contract, path: str | None = None) -> list[Unknown]:
    """Rules of ``contract`` that some leaves of ``facts`` could not be checked against, with
    the inspector's reason (its evidence for the missing fact) and whether the contract's
    ``allow_unknown`` accepts that."""
    shown = path or facts.path
    leaves, nested = _leaves(facts)
    out = []
    for rule in RULES:
        if rule.unknown is None or _rule_value(contract, rule) is None:
            continue
        undecided = [leaf for leaf in leaves if rule.unknown(leaf)]
        if undecided:
            names = [member_name(leaf) if nested else shown for leaf in undecided]
            reasons = [r for leaf in undecided for r in leaf.evidence.get(rule.fact or rule.key, [])
                       if r]
            out.append(Unknown(rule.key, shown, names if nested else [],
                               len(leaves) if nested else None,
                               allowed=rule.key in contract.allow_unknown,
                               reason=reasons[0] if reasons else "no evidence either way"))
    return out


# --- finding the binaries ---------------------------------------------------------------------


def _is_binary(p: Path) -> bool:
    """Sniff the first bytes with the inspector's registry (no parsing)."""
    from prebake.inspect import readers

    try:
        with open(p, "rb") as fh:
            head = fh.read(64)
    except OSError:
        return False
    return bool(head) and any(r.sniff(head) for r in readers())


def _walk(folder: Path) -> Iterator[Path]:
    root = folder / "lib" if (folder / "lib").is_dir() else folder
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            yield Path(dirpath) / name


def _unpack(asset: Path, dest: Path) -> None:
    from prebake.consume.unpack import safe_extract  # bounded, all-or-nothing, hostile-safe

    safe_extract(asset, dest)


def _is_asset(p: Path) -> bool:
    return p.name.endswith((".tar.xz", ".tar.gz", ".tgz", ".zip"))


@dataclass
class _Target:
    path: Path
    shown: str
    explicit: bool  # named on the command line: an unreadable file is an input error


def _targets(paths: Sequence[Path], tmp: Path, skipped: list[str]) -> list[_Target]:
    out: list[_Target] = []
    seen: set[Path] = set()

    def add(p: Path, shown: str, explicit: bool) -> None:
        real = p.resolve()
        if real in seen:
            return  # libfoo.so -> libfoo.so.1: one file, one check
        seen.add(real)
        out.append(_Target(p, shown, explicit))

    def add_asset(p: Path) -> None:
        dest = tmp / f"asset{len(list(tmp.iterdir()))}"
        dest.mkdir()
        _unpack(p, dest)
        for f in sorted(_walk(dest), key=lambda f: f.is_symlink()):
            rel = f.relative_to(dest).as_posix()
            if _is_binary(f):
                add(f, f"{p}!{rel}", False)
            else:
                skipped.append(f"{p}!{rel}")

    for raw in paths:
        p = Path(raw)
        if not p.exists():
            raise PrebakeError(f"{p}: no such file or folder")
        if p.is_file() and _is_asset(p):
            add_asset(p)
        elif p.is_dir():
            # real files first: a symlink to one (libfoo.so -> libfoo.so.1) is the same binary
            for f in sorted(_walk(p), key=lambda f: f.is_symlink()):
                if f.is_file() and _is_binary(f):
                    add(f, str(f), False)
                elif f.is_file() and _is_asset(f):  # a store's release folder of assets
                    add_asset(f)
                else:
                    skipped.append(str(f))
        else:
            add(p, str(p), True)
    return out


def _default_inspect(path: Path) -> Facts:
    from prebake.inspect import ParseOptions, inspect

    return inspect(path, ParseOptions(symbols=True))


def check_paths(paths: Sequence[Path], contract: Contract, *,
                inspect_fn: InspectFn | None = None) -> CheckReport:
    """Check files, folders and assets against ``contract``; every violation at once.

    Raises ``PrebakeError``/``FormatError`` (exit 2) for a named path that is missing or not a
    binary; a broken binary found inside a folder or asset is reported as a violation instead.
    """
    inspect_fn = inspect_fn or _default_inspect
    report = CheckReport(contract)
    with tempfile.TemporaryDirectory(prefix="prebake-check-") as tmp:
        targets = _targets(paths, Path(tmp), report.skipped)
        if not targets:
            raise PrebakeError(
                f"{', '.join(str(p) for p in paths)}: no binaries found to check"
            )
        archives: list[tuple[str, Facts]] = []
        for t in targets:
            try:
                facts = inspect_fn(t.path)
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
            report.violations.extend(check_facts(facts, contract, t.shown))
            report.unknown.extend(unknown_facts(facts, contract, t.shown))
            if facts.kind == "static-library" and facts.members is not None:
                archives.append((t.shown, facts))
        if len(archives) > 1:
            from prebake.contract.clash import clash_violations

            report.violations.extend(clash_violations(archives))
    return report
