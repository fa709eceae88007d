"""The store a build publishes to and looks up input hashes in.

Uses the store engineer's ``prebake.store.open_store``; until that lands, a minimal local-folder
store with the same visibility rule (the ``.sha256`` sidecar is written last, so an asset is only
complete once its checksum names it) keeps ``prebake build`` working for ``file://`` URLs.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from prebake.errors import PrebakeError
from prebake.package.naming import (
    MANIFEST_SUFFIX,
    SHA256_SUFFIX,
    AssetId,
    parse_asset_name,
)
from prebake.store.base import DEFAULT_RELEASE


class _LocalFolderStore:
    """``file://DIR``: ``DIR/<release>/<asset>`` with sidecars (fallback only)."""

    writable = True

    def __init__(self, url: str, folder: Path) -> None:
        self.url = url
        self.folder = folder

    def _dir(self, release: str | None) -> Path:
        return self.folder / (release or DEFAULT_RELEASE)

    def list_assets(self, release: str | None = None) -> list[AssetId]:
        rels = [release] if release else list(self.releases())
        out = []
        for r in rels:
            for p in sorted(self._dir(r).glob("*.tar.xz")):
                aid = parse_asset_name(p.name)
                if aid and (p.parent / aid.sha256_name).exists() and (
                        p.parent / aid.manifest_name).exists():
                    out.append(aid)
        return out

    def read_sidecar(self, asset: AssetId, suffix: str, release: str | None = None
                     ) -> bytes | None:
        d = self._dir(release)
        if not (d / asset.filename).exists() or not (d / asset.sha256_name).exists():
            return None
        p = d / (asset.filename + suffix)
        return p.read_bytes() if p.exists() else None

    def download(self, asset: AssetId, dest: Path, release: str | None = None) -> Path:
        shutil.copyfile(self._dir(release) / asset.filename, dest)
        return dest

    def publish(self, asset_path: Path, release: str | None = None) -> AssetId:
        from prebake.jsonio import atomic_write_bytes

        aid = parse_asset_name(asset_path.name)
        if aid is None:
            raise PrebakeError(f"{asset_path}: not an asset name")
        d = self._dir(release)
        (d / aid.sha256_name).unlink(missing_ok=True)
        for suffix in ("", MANIFEST_SUFFIX, SHA256_SUFFIX):
            src = asset_path.parent / (asset_path.name + suffix)
            atomic_write_bytes(d / (aid.filename + suffix), src.read_bytes())
        return aid

    def releases(self) -> Iterator[str]:
        if self.folder.is_dir():
            yield from sorted(p.name for p in self.folder.iterdir() if p.is_dir())


def open_build_store(url: str, root: Path) -> Any:
    """The workspace's default store (``Store`` protocol; the fallback implements its subset)."""
    try:
        from prebake.store import open_store
    except ImportError:
        parsed = urlparse(url)
        if parsed.scheme != "file":
            raise PrebakeError(f"{url}: only file:// stores are available in this build") from None
        raw = url[len("file://"):]
        folder = Path(raw) if raw.startswith("/") else root / raw
        return _LocalFolderStore(url, folder.resolve())
    return open_store(url, root=root)


def stored_manifest(store: Any, aid: AssetId) -> dict[str, Any] | None:
    """The manifest sidecar of a complete asset in the store, or ``None``."""
    raw = store.read_sidecar(aid, MANIFEST_SUFFIX)
    if raw is None:
        return None
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None
