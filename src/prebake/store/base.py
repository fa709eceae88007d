"""The interface every store backend implements (one Protocol, one registry by URL scheme).

Stores hold *release assets* with their sidecars, grouped by release tag (``continuous`` by
default). Publishing is atomic from a reader's point of view: an asset is visible only once its
``.sha256`` and ``.json`` sidecars are there and match it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

from prebake.package.naming import AssetId

DEFAULT_RELEASE = "continuous"


class Store(Protocol):
    url: str
    writable: bool

    def list_assets(self, release: str | None = None) -> list[AssetId]:
        """Complete assets (with both sidecars) in ``release`` (``None``: every release)."""
        ...

    def read_sidecar(self, asset: AssetId, suffix: str, release: str | None = None) -> bytes | None:
        """The ``.sha256`` or ``.json`` sidecar of a complete asset, or ``None`` if absent."""
        ...

    def download(self, asset: AssetId, dest: Path, release: str | None = None) -> Path:
        """Fetch the asset file to ``dest`` (resuming a partial ``dest``); no verification."""
        ...

    def publish(self, asset_path: Path, release: str | None = None) -> AssetId:
        """Upload the asset and its sidecars (found next to it) atomically and idempotently."""
        ...

    def releases(self) -> Iterator[str]: ...
