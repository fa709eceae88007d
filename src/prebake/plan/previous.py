"""``plan --explain`` against the previous *version*: when the store has no asset of the unit's
version yet (a bump), the inputs are compared with the manifest of the highest earlier version
of the same asset and platform, so a bump shows what moved — pins, source URLs and digests, the
recipe file, the toolchain — before anything is built."""

from __future__ import annotations

from pathlib import Path

from prebake.diff import previous_in_store
from prebake.manifest import Manifest
from prebake.plan.units import Unit
from prebake.store import open_store
from prebake.store.base import read_manifest


def previous_manifest(unit: Unit, store_url: str, root: Path
                      ) -> tuple[str, Manifest] | None:
    """``(asset file name, manifest)`` of the store's previous version of the unit's asset, or
    ``None`` (a first release). Raises ``PrebakeError``/``OSError`` when the store cannot be
    asked."""
    store = open_store(store_url, root=root)
    prev = previous_in_store(store, unit.asset)
    if prev is None or prev[0] == unit.asset:
        return None
    manifest = read_manifest(store, prev[0], prev[1])
    return (prev[0].filename, manifest) if manifest is not None else None
