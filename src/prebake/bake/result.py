"""What ``prebake build`` reports per unit (the table, ``--json``, the exit status)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class UnitResult:
    unit: str
    state: str  # built | skipped | failed | blocked | planned
    asset: str | None = None
    sha256: str | None = None
    input_hash: str = ""
    seconds: float = 0.0
    log: str | None = None
    message: str = ""
    reason: str = ""
    dry_run: list[dict[str, Any]] = field(default_factory=list)
    diff: dict[str, Any] | None = None
    diff_markdown: str = ""
    want_diff: bool = False

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "unit": self.unit, "state": self.state, "asset": self.asset, "sha256": self.sha256,
            "input_hash": self.input_hash, "seconds": round(self.seconds, 3), "log": self.log,
            "message": self.message, "reason": self.reason,
        }
        if self.dry_run:
            out["steps"] = self.dry_run
        if self.want_diff:
            out["diff"] = self.diff
        return out
