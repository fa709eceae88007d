"""What a report shows: the store's assets with their manifests, and the diffs between them."""

from __future__ import annotations

from dataclasses import dataclass, field

from prebake import abikeys
from prebake.diff.changes import DiffResult
from prebake.manifest import Manifest
from prebake.package.naming import AssetId

# The facts a matrix cell shows (manifest ``facts`` -> abi / top level), in the table's order.
CELL_FACTS = tuple(k.name for k in abikeys.KEYS if k.report)


@dataclass
class Release:
    """One asset of the store and what its manifest says."""

    aid: AssetId
    release: str | None
    manifest: Manifest

    @property
    def size(self) -> int:
        return sum(f.size for f in self.manifest.files if f.size is not None)


@dataclass
class ReportData:
    store: str
    releases: list[Release]
    diffs: dict[tuple[AssetId, AssetId], DiffResult] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
