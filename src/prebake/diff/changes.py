"""The result of a diff: a flat list of classified changes plus the tables a reader scans.

Every change says whether it breaks consumers and why; ``DiffResult.breaking`` is what the
command's exit code and a build summary act on. ``to_json`` is the ``prebake diff --json``
payload (``schemas/diff.schema.json``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

DIFF_SCHEMA_VERSION = 1
CATEGORIES = ("library", "export", "symbol-version", "fact", "link-order", "header", "size")


def pct(old: int | None, new: int | None) -> float | None:
    """Percent change from ``old`` to ``new`` (one decimal), ``None`` when not defined."""
    if old is None or new is None or old == 0:
        return None
    return round((new - old) * 100.0 / old, 1)


@dataclass(frozen=True)
class Change:
    category: str  # one of CATEGORIES
    subject: str  # symbol, fact name, header path, library key
    breaking: bool
    reason: str
    library: str | None = None
    old: Any = None
    new: Any = None
    demangled: str | None = None
    kind: str | None = None  # a symbol's: "function" or "variable" (None: not known)

    def to_json(self) -> dict[str, Any]:
        return {"category": self.category, "subject": self.subject, "library": self.library,
                "breaking": self.breaking, "reason": self.reason, "old": self.old,
                "new": self.new, "demangled": self.demangled, "kind": self.kind}


@dataclass(frozen=True)
class LibraryRow:
    """One matched (or unmatched) library with its sizes and export counts."""

    key: str
    status: str  # added | removed | changed | unchanged
    old_path: str | None
    new_path: str | None
    old_size: int | None
    new_size: int | None
    old_exports: int | None
    new_exports: int | None
    kind: str | None

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "status": self.status, "kind": self.kind,
                "old_path": self.old_path, "new_path": self.new_path,
                "old_size": self.old_size, "new_size": self.new_size,
                "size_change_pct": pct(self.old_size, self.new_size),
                "old_exports": self.old_exports, "new_exports": self.new_exports}


@dataclass
class DiffResult:
    old: dict[str, Any]
    new: dict[str, Any]
    changes: list[Change] = field(default_factory=list)
    libraries: list[LibraryRow] = field(default_factory=list)
    link_order: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, int | None] = field(default_factory=dict)  # old/new counts

    @property
    def breaking(self) -> bool:
        return any(c.breaking for c in self.changes)

    def of(self, *, breaking: bool | None = None, category: str | None = None) -> list[Change]:
        return [c for c in self.changes
                if (breaking is None or c.breaking == breaking)
                and (category is None or c.category == category)]

    def counts(self) -> dict[str, int]:
        return {"breaking": len(self.of(breaking=True)),
                "compatible": len(self.of(breaking=False))}

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": DIFF_SCHEMA_VERSION,
            "old": self.old,
            "new": self.new,
            "breaking": self.breaking,
            "counts": self.counts(),
            "size": {"old": self.old.get("size"), "new": self.new.get("size"),
                     "change_pct": pct(self.old.get("size"), self.new.get("size"))},
            "changes": [c.to_json() for c in self.changes],
            "libraries": [r.to_json() for r in self.libraries],
            "link_order": self.link_order,
            "headers": self.headers,
        }
