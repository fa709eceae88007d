"""What a contract check found: each violation (one rule, one file, every offending member
with its evidence), the rules left undecided, and the report over every file checked.

Plain values without the rules or the readers behind them, so whoever reports a finding — the
check itself, the clash rule, a build's guard — builds and shows it the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prebake.contract.terms import Contract
from prebake.jsonio import SCHEMA_VERSION

MAX_MEMBERS_SHOWN = 5
MAX_EVIDENCE_SHOWN = 4


@dataclass
class Violation:
    """One rule broken by one file; ``members``: the archive members (or slices) breaking it."""

    rule: str
    expected: str
    found: str
    path: str
    members: list[str]
    detail: str
    total: int | None = None  # members (or slices) in the file, when it has any
    evidence: dict[str, list[str]] = field(default_factory=dict)  # member (or path) -> reasons

    def message(self) -> str:
        return f"{self.path}: {self.detail}"

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "expected": self.expected,
            "found": self.found,
            "path": self.path,
            "members": self.members,
            "total": self.total,
            "evidence": self.evidence,
            "detail": self.detail,
        }


@dataclass
class Unknown:
    """A rule whose fact could not be read for some leaves.

    It fails the check (fail closed) unless the contract lists the key in ``allow_unknown``;
    either way the report lists it, with the inspector's reason when it gave one.
    """

    rule: str
    path: str
    members: list[str]
    total: int | None
    allowed: bool = False  # the contract's allow_unknown names this rule
    reason: str = "no evidence either way"

    def message(self) -> str:
        why = f"({self.reason})"
        if self.total is None:
            head = f"{self.path}: {self.rule}: unknown {why}"
        else:
            head = (f"{self.path}: {self.rule}: unknown for {len(self.members)} of {self.total} "
                    f"member(s) {why}: {', '.join(self.members[:MAX_MEMBERS_SHOWN])}"
                    + (", …" if len(self.members) > MAX_MEMBERS_SHOWN else ""))
        if self.allowed:
            return head + ", not checked (allow_unknown)"
        return (head + f"; fails closed (the contract's allow_unknown = [\"{self.rule}\"] "
                "accepts it unchecked)")

    def to_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "path": self.path, "members": self.members,
                "total": self.total, "allowed": self.allowed, "reason": self.reason}


@dataclass
class CheckReport:
    """Every violation of every file at once; ``ok`` when there is none."""

    contract: Contract
    files: list[str] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # folder entries that are not binaries
    unknown: list[Unknown] = field(default_factory=list)  # undecided rules (fail unless allowed)

    @property
    def ok(self) -> bool:
        return not self.violations and not self.unreadable

    @property
    def passed(self) -> list[str]:
        """The files that satisfy the contract (no violation, no unreadable rule)."""
        failing = {v.path for v in self.violations} | {u.path for u in self.unreadable}
        return [f for f in self.files if f not in failing]

    @property
    def unreadable(self) -> list[Unknown]:
        """Undecided rules the contract did not opt out of: each fails the check."""
        return [u for u in self.unknown if not u.allowed]

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "ok": self.ok,
            "contract": self.contract.to_json(),
            "files": self.files,
            "passed": self.passed,
            "skipped": self.skipped,
            "unknown": [u.to_json() for u in self.unknown],
            "violations": [v.to_json() for v in self.violations],
        }

    def relabel(self, folder: Path, label: str) -> None:
        """Name files under ``folder`` (a temporary unpack) as ``label!relative/path``."""
        base = str(folder).rstrip("/") + "/"

        def name(path: str) -> str:
            return label + "!" + path[len(base):] if path.startswith(base) else path

        self.files = [name(f) for f in self.files]
        for v in self.violations:
            v.path = name(v.path)
        for u in self.unknown:
            u.path = name(u.path)

    def render(self) -> str:
        n = len(self.files)
        if self.ok:
            return f"ok: {n} file(s) satisfy the contract"
        lines = [v.message() for v in self.violations]
        lines += [u.message() for u in self.unreadable]
        parts = [f"{len(self.violations)} violation(s)"] if self.violations else []
        if self.unreadable:
            parts.append(f"{len(self.unreadable)} rule(s) that could not be read")
        lines.append(f"{' and '.join(parts)} in {n} file(s) checked")
        return "\n".join(lines)
