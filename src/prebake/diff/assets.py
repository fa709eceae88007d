"""``prebake diff``: what changed for consumers between two releases of a dependency.

``diff_paths(OLD, NEW)`` compares assets, folders or binaries; ``diff_against_store(asset,
store)`` compares a freshly built asset with the store's current one (same version when it is a
rebuild, else the highest earlier version), so a build can show a bump's consumer impact before
it publishes. Anchors: libabigail's ``abidiff`` for exported symbols, CI step summaries.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from prebake.diff.changes import DiffResult
from prebake.diff.compare import diff_sides
from prebake.diff.markdown import code, markdown
from prebake.diff.side import load_side
from prebake.diff.versions import version_key
from prebake.digest import file_sha256
from prebake.errors import PrebakeError
from prebake.package.naming import SHA256_SUFFIX, AssetId, parse_asset_name, parse_sha256_line
from prebake.store.base import DEFAULT_RELEASE

if TYPE_CHECKING:
    from prebake.store.base import Store


def diff_paths(old: Path, new: Path, *, old_label: str | None = None,
               new_label: str | None = None) -> DiffResult:
    """Compare two assets, folders or binaries (any mix)."""
    return diff_sides(load_side(Path(old), old_label), load_side(Path(new), new_label))


def assets_in_store(store: Store) -> list[tuple[AssetId, str | None]]:
    """Every complete asset with the release it is in (the default release first)."""
    tags: list[str | None] = [*store.releases()] or [None]
    tags.sort(key=lambda t: t != DEFAULT_RELEASE)
    seen: dict[AssetId, str | None] = {}
    for tag in tags:
        for aid in store.list_assets(tag):
            seen.setdefault(aid, tag)
    return list(seen.items())


def previous_in_store(store: Store, aid: AssetId) -> tuple[AssetId, str | None] | None:
    """The store's current asset for ``aid``: the same asset (a rebuild), else the highest
    earlier version of the same name and platform, else ``None``."""
    same = [(a, t) for a, t in assets_in_store(store)
            if a.name == aid.name and a.platform == aid.platform]
    for a, t in same:
        if a == aid:
            return a, t
    earlier = [(a, t) for a, t in same if version_key(a.version) < version_key(aid.version)]
    return max(earlier, key=lambda at: version_key(at[0].version)) if earlier else None


def download_verified(store: Store, aid: AssetId, release: str | None, dest_dir: Path) -> Path:
    """Download ``aid`` and check it against its ``.sha256`` sidecar (a diff of a corrupt or
    substituted asset would be worse than none)."""
    dest = Path(dest_dir) / aid.filename
    store.download(aid, dest, release)
    raw = store.read_sidecar(aid, SHA256_SUFFIX, release)
    if raw is None:
        raise PrebakeError(f"{store.url}: {aid.filename} has no .sha256 sidecar")
    want = parse_sha256_line(raw.decode("utf-8", "replace"), aid.filename)
    got = file_sha256(dest)
    if got != want:
        raise PrebakeError(f"{store.url}: {aid.filename} hashes to {got}, its sidecar says {want}")
    return dest


def diff_against_store(asset_path: Path, store: Store) -> DiffResult | None:
    """The diff from the store's current asset to ``asset_path``; ``None`` when the store has
    no earlier release of this dependency on this platform (a first release)."""
    asset_path = Path(asset_path)
    aid = parse_asset_name(asset_path.name)
    if aid is None:
        raise PrebakeError(f"{asset_path}: not an asset name (<name>-<version>-<platform>.tar.xz)")
    prev = previous_in_store(store, aid)
    if prev is None:
        return None
    with tempfile.TemporaryDirectory(prefix="prebake-diff-store-") as tmp:
        old = download_verified(store, prev[0], prev[1], Path(tmp))
        return diff_paths(old, asset_path, old_label=f"{prev[0].filename} (store)",
                          new_label=f"{asset_path.name} (built)")


def build_summary(asset_path: Path, store: Store) -> tuple[DiffResult | None, str]:
    """What ``prebake build --diff`` shows for a freshly packaged asset, before it is published:
    the diff against the store's current asset and its markdown (a first release says so)."""
    result = diff_against_store(asset_path, store)
    if result is None:
        aid = parse_asset_name(Path(asset_path).name)
        what = f"{aid.name} on {aid.platform}" if aid else Path(asset_path).name
        return None, (f"### prebake diff: {code(Path(asset_path).name)}\n\nFirst release of "
                      f"{code(what)} in {code(store.url)}: nothing to compare.\n")
    return result, markdown(result)
