"""``https://`` mirrors: read-only, several tried in order.

Each mirror serves ``<base>/<release>/<file>`` — GitHub's own
``https://github.com/OWNER/REPO/releases/download`` has exactly that shape, as does a static copy
of a ``file://`` store. A mirror that is down, answers 5xx or lacks the file is skipped for the
next one; the first mirror that has the ``.sha256`` sidecar is the one the asset comes from (the
same mirror, so the asset and its checksum agree). Plain HTTP cannot list, so ``list_assets``
asks for names instead of guessing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar
from urllib.parse import quote

import httpx

from prebake.errors import PrebakeError
from prebake.package.naming import AssetId
from prebake.store import transport
from prebake.store.base import DEFAULT_RELEASE, ProgressFn, StoreError, sidecar_limit

T = TypeVar("T")
_PER_MIRROR_ATTEMPTS = 2



class _Absent(StoreError):
    """A mirror that answered does not have the file (as opposed to: no mirror answered)."""

class MirrorStore:
    writable = False

    def __init__(self, urls: Sequence[str]) -> None:
        self.mirrors = [u.rstrip("/") for u in urls]
        self.url = ",".join(self.mirrors)
        self._client: httpx.Client | None = None
        self._source: dict[tuple[AssetId, str], str] = {}
        self._dead: set[str] = set()  # mirrors that failed other than by 404: skipped after

    @property
    def client(self) -> httpx.Client:
        if self._client is None:
            self._client = transport.make_client()
        return self._client

    def _file_url(self, base: str, release: str | None, name: str) -> str:
        return f"{base}/{quote(release or DEFAULT_RELEASE, safe='')}/{quote(name)}"

    def _each(self, mirrors: Sequence[str], fn: Callable[[str], T], what: str) -> T:
        """``fn(mirror)`` on each mirror in turn until one succeeds.

        Raises ``_Absent`` when a mirror that answered said the file is not there, and a plain
        ``StoreError`` when no mirror could answer at all (all down).
        """
        failures = []
        answered = False
        for base in mirrors:
            if base in self._dead:
                failures.append(f"{base}: down")
                continue
            try:
                return fn(base)
            except transport.NotFound as exc:
                answered = True
                failures.append(str(exc))
            except StoreError as exc:
                self._dead.add(base)
                failures.append(str(exc))
        cls = _Absent if answered else StoreError
        raise cls(f"{what}: no mirror had it ({'; '.join(failures)})")

    def releases(self) -> list[str]:
        return [DEFAULT_RELEASE]

    def list_assets(self, release: str | None = None) -> list[AssetId]:
        raise PrebakeError(f"{self.url}: HTTP mirrors cannot list assets; fetch them by name")

    def read_sidecar(self, asset: AssetId, suffix: str, release: str | None = None) -> bytes | None:
        tag = release or DEFAULT_RELEASE

        def one(base: str) -> bytes:
            url = self._file_url(base, tag, asset.filename + suffix)
            data = transport.get_bytes(self.client, url, what=f"{base}: {asset.filename}{suffix}",
                                       attempts=_PER_MIRROR_ATTEMPTS, limit=sidecar_limit(suffix))
            self._source.setdefault((asset, tag), base)
            return data

        preferred = self._source.get((asset, tag))
        order = [preferred, *[m for m in self.mirrors if m != preferred]] if preferred \
            else self.mirrors
        try:
            return self._each(order, one, f"{asset.filename}{suffix}")
        except _Absent:
            return None  # a live mirror says it is not there; all mirrors down still raises

    def download(self, asset: AssetId, dest: Path, release: str | None = None, *,
                 progress: ProgressFn | None = None, limit: int | None = None) -> Path:
        tag = release or DEFAULT_RELEASE
        preferred = self._source.get((asset, tag))
        order = [preferred, *[m for m in self.mirrors if m != preferred]] if preferred \
            else self.mirrors

        def one(base: str) -> Path:
            return transport.download(self.client, self._file_url(base, tag, asset.filename), dest,
                                      what=f"{base}: {asset.filename}", progress=progress,
                                      attempts=_PER_MIRROR_ATTEMPTS, limit=limit)

        return self._each(order, one, f"{self.url}: download {asset.filename}")

    def publish(self, asset_path: Path, release: str | None = None, *,
                progress: ProgressFn | None = None) -> AssetId:
        raise PrebakeError(f"{self.url}: HTTP mirrors are read-only; publish to the store they "
                           "mirror")

    def asset_url(self, asset: AssetId, release: str | None = None) -> str:
        tag = release or DEFAULT_RELEASE
        base = self._source.get((asset, tag), self.mirrors[0])
        return self._file_url(base, tag, asset.filename)


def open_mirrors(urls: Sequence[str], root: Path | None) -> MirrorStore:
    return MirrorStore(urls)
