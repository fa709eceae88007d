"""What the guards found per recipe, and what ``prebake build`` reports per unit (the table,
``--json``, the exit status)."""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prebake.package.libs import Library

if TYPE_CHECKING:
    from prebake.contract.findings import CheckReport, Violation


@dataclass
class GuardReport:
    """What one recipe's guards found. ``failures`` are the one-line-headed messages that fail
    the unit; ``check`` the contract check as decided (``None`` when an earlier guard stopped
    first), with its file paths under ``prefix``."""

    recipe: str = ""
    prefix: Path | None = None
    check: CheckReport | None = None
    failures: list[str] = field(default_factory=list)
    facts: list[dict[str, Any]] = field(default_factory=list)
    libs: list[Library] = field(default_factory=list)
    link_order: list[list[str]] = field(default_factory=list)
    cxx: bool = False
    # What the guards decided, for the manifest (machine-independent: relative paths only)
    undecided: list[str] = field(default_factory=list)  # "rule: lib/x.a" checks without evidence
    linked: list[str] = field(default_factory=list)  # how the link test referenced the library
    # allow_undefined pattern -> the undefined names it let through the whole-archive proof
    allowed: dict[str, list[str]] = field(default_factory=dict)
    # binaries the build added that Outputs.libs does not name: guarded, shipped, not exported
    unlisted: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures

    @property
    def violations(self) -> list[Violation]:
        """The contract's violations, each file named relative to the prefix (as it ships)."""
        if self.check is None:
            return []
        return [replace(v, path=self._relative(v.path)) for v in self.check.violations]

    def _relative(self, path: str) -> str:
        p = Path(path)
        if self.prefix is not None and p.is_relative_to(self.prefix):
            return p.relative_to(self.prefix).as_posix()
        return path


class UnitState(enum.StrEnum):
    BUILT = "built"  # built, guarded, packaged (and published unless told not to)
    SKIPPED = "skipped"  # the store holds its asset built from the same inputs
    FAILED = "failed"  # a step refused; ``message`` says why, ``violations`` what broke
    BLOCKED = "blocked"  # a unit it builds on failed
    PLANNED = "planned"  # a dry run: nothing ran

    @property
    def bad(self) -> bool:
        """A state that makes ``prebake build`` exit 1 and stops dependent units."""
        return self in (UnitState.FAILED, UnitState.BLOCKED)


@dataclass(frozen=True)
class UnitResult:
    """One unit's outcome. ``message`` is the full text of why it failed (the log has more);
    ``violations`` are the contract check's findings behind a guard failure, structured."""

    unit: str
    state: UnitState
    asset: str | None = None
    sha256: str | None = None
    input_hash: str = ""
    seconds: float = 0.0
    log: str | None = None
    message: str = ""
    reason: str = ""
    violations: Sequence[Violation] = ()
    dry_run: Sequence[Mapping[str, Any]] = ()
    diff: Mapping[str, Any] | None = None
    diff_markdown: str = ""
    want_diff: bool = False
    breaking: bool = False  # --diff found breaking changes: the build publishes nothing
    to_publish: Path | None = None  # --diff: built, published once every diff is known

    @property
    def detail(self) -> str:
        """One line for the table: the first violation, else the message's first line, else
        why the unit was built or skipped."""
        if self.violations:
            return self.violations[0].message()
        return self.message.splitlines()[0] if self.message else self.reason

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "unit": self.unit, "state": self.state.value, "asset": self.asset,
            "sha256": self.sha256, "input_hash": self.input_hash,
            "seconds": round(self.seconds, 3), "log": self.log,
            "message": self.message, "reason": self.reason,
            "violations": [v.to_json() for v in self.violations],
        }
        if self.dry_run:
            out["steps"] = [dict(s) for s in self.dry_run]
        if self.want_diff:
            out["diff"] = dict(self.diff) if self.diff is not None else None
        return out
