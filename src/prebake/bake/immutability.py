"""The stage-immutability guard: a later stage may add files to the prefix, never change or
delete one an earlier stage installed (that file already shipped in the earlier stage's asset)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from prebake.digest import file_sha256

Snapshot = dict[str, str]  # posix path relative to the prefix -> sha256 (or "link:<target>")


def snapshot(prefix: Path) -> Snapshot:
    """Every file and symlink under ``prefix`` with its content hash."""
    out: Snapshot = {}
    if not prefix.is_dir():
        return out
    for dirpath, dirnames, filenames in os.walk(prefix):
        d = Path(dirpath)
        for name in filenames + [n for n in dirnames if (d / n).is_symlink()]:
            p = d / name
            rel = p.relative_to(prefix).as_posix()
            if p.is_symlink():
                out[rel] = "link:" + str(p.readlink())
                continue
            out[rel] = file_sha256(p)
    return out


@dataclass
class StageDiff:
    changed: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.changed and not self.deleted

    def render(self, stage: str, limit: int = 20) -> str:
        lines = [f"stage {stage!r} modified files an earlier stage installed "
                 "(a later stage may only add files):"]
        for kind, paths in (("changed", self.changed), ("deleted", self.deleted)):
            lines += [f"  {kind}: {p}" for p in paths[:limit]]
            if len(paths) > limit:
                lines.append(f"  … and {len(paths) - limit} more {kind}")
        return "\n".join(lines)


def compare(before: Snapshot, after: Snapshot) -> StageDiff:
    return StageDiff(
        changed=sorted(p for p in before if p in after and after[p] != before[p]),
        deleted=sorted(p for p in before if p not in after),
        added=sorted(p for p in after if p not in before),
    )
