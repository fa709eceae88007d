"""What ``prebake build`` reports per unit (the table, ``--json``, the exit status)."""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prebake.contract.findings import Violation


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
