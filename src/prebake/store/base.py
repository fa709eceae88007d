"""The interface every store backend implements (one Protocol, one registry by URL scheme).

Stores hold *release assets* with their sidecars, grouped by release tag (``continuous`` by
default, the rolling prerelease; a tag such as ``v1.27.0`` for fixed releases). Publishing is
atomic from a reader's point of view: the ``.sha256`` sidecar is the commit marker, written last
(and removed first when an asset is replaced), and readers only list assets whose asset file and
both sidecars are present. A killed publisher leaves at worst an unlisted, unverifiable file.

Helpers shared by the backends live here too: validating an asset before upload, retries with
backoff on transient errors, and token redaction.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar
from urllib.parse import unquote

from prebake.bounded import read_bounded
from prebake.digest import ProgressFn as ProgressFn  # the stores' progress callback type
from prebake.digest import file_sha256
from prebake.errors import PrebakeError
from prebake.manifest import Manifest, ManifestError, parse_manifest, read_manifest_file
from prebake.package.naming import (
    MANIFEST_SUFFIX,
    MAX_ASSET_BYTES,
    SHA256_SUFFIX,
    TRUST_SIDECAR_SUFFIXES,
    AssetId,
    parse_asset_name,
    parse_sha256_line,
)
from prebake.redact import redact_text

DEFAULT_RELEASE = "continuous"


class StoreError(PrebakeError):
    """A store refused or failed an operation (after retries): one line, exit code 2."""


class AuthError(StoreError):
    """Credentials missing or refused; the message says which variable to set."""


class TransientError(StoreError):
    """A failure worth retrying (5xx, 429, connection reset); raised to ``with_retries``."""


class Store(Protocol):
    url: str
    writable: bool

    def list_assets(self, release: str | None = None) -> list[AssetId]:
        """Complete assets (asset + both sidecars) in ``release`` (``None``: every release)."""
        ...

    def releases(self) -> list[str]:
        """Release tags this store holds (mirrors that cannot list return the default)."""
        ...

    def read_sidecar(self, asset: AssetId, suffix: str, release: str | None = None) -> bytes | None:
        """The ``.sha256`` or ``.json`` sidecar of ``asset`` in ``release``, ``None`` if absent."""
        ...

    def download(self, asset: AssetId, dest: Path, release: str | None = None, *,
                 progress: ProgressFn | None = None, limit: int | None = None) -> Path:
        """Fetch the asset file to ``dest`` (resuming ``dest.part`` where possible); no
        verification: the caller checks the sha256. ``limit``: the asset's known size (a
        consumer lock's), past which nothing more is read; else ``MAX_ASSET_BYTES``."""
        ...

    def publish(self, asset_path: Path, release: str | None = None, *,
                progress: ProgressFn | None = None) -> AssetId:
        """Upload the asset and its sidecars (found next to it) atomically and idempotently;
        an asset of the same name is replaced."""
        ...

    def asset_url(self, asset: AssetId, release: str | None = None) -> str:
        """Where a human or ``curl`` would download the asset (recorded in locks)."""
        ...


def bound_words(limit: int | None) -> str:
    """How a download's bound is said: the lock's size, or prebake's own bound."""
    if limit is not None:
        return f"more than the {limit} bytes the consumer lock records for it"
    return (f"more than {MAX_ASSET_BYTES} bytes (no asset is larger; the consumer lock records "
            "no size to hold it to)")


@dataclass(frozen=True)
class PublishSet:
    """An asset validated for upload: its sidecars exist, parse, and match its bytes."""

    aid: AssetId
    asset: Path
    sha256_file: Path
    manifest_file: Path
    sha256: str
    size: int
    #: optional trust sidecars present next to the asset (``.intoto.json``, ``.sig``); uploaded
    #: before the ``.sha256`` commit marker, and removed from the store when absent here
    extras: tuple[Path, ...] = ()

    def stale_extras(self) -> list[str]:
        """Trust sidecar names a store must delete so an old signature cannot outlive its asset."""
        have = {p.name for p in self.extras}
        return [n for n in (self.aid.filename + s for s in TRUST_SIDECAR_SUFFIXES)
                if n not in have]


def prepare_publish(asset_path: Path) -> PublishSet:
    """Refuse, before any upload, what no reader should ever see: a misnamed asset, one of
    2 GiB or more, missing or stale sidecars, or a manifest naming another asset."""
    asset_path = Path(asset_path)
    aid = parse_asset_name(asset_path.name)
    if aid is None:
        raise PrebakeError(f"{asset_path}: not an asset name (<name>-<version>-<platform>.tar.xz)")
    if not asset_path.is_file():
        raise PrebakeError(f"{asset_path}: no such file")
    size = asset_path.stat().st_size
    if size >= MAX_ASSET_BYTES:
        raise PrebakeError(
            f"{asset_path}: {size} bytes; release assets of 2 GiB or more are refused "
            "(split the asset, e.g. one per recipe)"
        )
    sha_file = asset_path.with_name(aid.sha256_name)
    man_file = asset_path.with_name(aid.manifest_name)
    for side in (sha_file, man_file):
        if not side.is_file():
            raise PrebakeError(f"{side}: missing sidecar; publish needs the asset's .sha256 "
                               "and .json next to it")

    digest = parse_sha256_line(
        read_bounded(sha_file, sidecar_limit(SHA256_SUFFIX), "sha256 sidecar").decode(
            "utf-8", "replace"), aid.filename)
    named = read_manifest_file(man_file, MAX_JSON_SIDECAR).named
    if named != (aid.name, aid.version, aid.platform):
        raise PrebakeError(f"{man_file}: manifest names {named}, the file name says "
                           f"{(aid.name, aid.version, aid.platform)}")
    actual = file_sha256(asset_path)
    if actual != digest:
        raise PrebakeError(f"{sha_file}: says {digest} but {asset_path.name} hashes to {actual}; "
                           "the sidecar is stale")
    extras = tuple(p for s in TRUST_SIDECAR_SUFFIXES
                   if (p := asset_path.with_name(aid.filename + s)).is_file())
    return PublishSet(aid, asset_path, sha_file, man_file, digest, size, extras)


#: the most a sidecar may hold: a checksum line, an armored signature, a manifest or statement
SIDECAR_LIMITS = {SHA256_SUFFIX: 4096, ".sig": 64 * 1024}
MAX_JSON_SIDECAR = 64 * 1024**2


def sidecar_limit(suffix: str) -> int:
    return SIDECAR_LIMITS.get(suffix, MAX_JSON_SIDECAR)


def retry_delays(attempts: int | None = None) -> list[float]:
    """Exponential backoff with jitter; ``PREBAKE_RETRY_BASE`` (seconds) scales it (tests use
    a few milliseconds), ``PREBAKE_RETRIES`` sets the number of attempts."""
    base = float(os.environ.get("PREBAKE_RETRY_BASE", "1.0"))
    n = attempts if attempts is not None else int(os.environ.get("PREBAKE_RETRIES", "6"))
    return [base * (2**i) * (0.5 + random.random()) for i in range(max(n - 1, 0))]


T = TypeVar("T")


def with_retries(fn: Callable[[], T], what: str, attempts: int | None = None) -> T:
    """Call ``fn`` until it does not raise ``TransientError``; the last error names ``what``."""
    delays = retry_delays(attempts)
    for i in range(len(delays) + 1):
        try:
            return fn()
        except TransientError as exc:
            if i == len(delays):
                # the error usually names ``what`` already: say it once
                msg = str(exc) if str(exc).startswith(what) else f"{what}: {exc}"
                raise StoreError(f"{msg} (gave up after {i + 1} attempts)") from None
            time.sleep(delays[i])
    raise AssertionError("unreachable")


def redact(text: str, *secrets: str | None) -> str:
    """Remove every secret from ``text`` (error messages must never carry a token): the
    store's own ``secrets`` (any length: a store knows its token) and whatever
    ``prebake.redact`` recognises (URL credentials, signed-URL parameters)."""
    for s in secrets:
        if s:
            text = text.replace(s, "***")
    return redact_text(text)


def read_manifest(store: Store, aid: AssetId, release: str | None = None) -> Manifest | None:
    """The manifest sidecar of a complete asset in ``release``, ``None`` when it is absent or
    not a valid manifest (callers treat an unreadable manifest like a missing asset)."""
    raw = store.read_sidecar(aid, MANIFEST_SUFFIX, release)
    if raw is None:
        return None
    try:
        return parse_manifest(raw, f"{aid.manifest_name} in {store.url}")
    except ManifestError:
        return None


def is_complete(names: set[str], filename: str) -> bool:
    return {filename, filename + SHA256_SUFFIX, filename + MANIFEST_SUFFIX} <= names


def complete_assets(names: set[str]) -> list[AssetId]:
    """The assets among ``names`` whose two sidecars are present too, sorted."""
    out = []
    for n in names:
        aid = parse_asset_name(n)
        if aid is not None and is_complete(names, n):
            out.append(aid)
    return sorted(out)


def local_path(url: str, root: Path | None) -> Path:
    """The folder of a ``file://`` URL (``file://./releases``, ``file:///abs``, or a bare path)."""
    rest = url[len("file://"):] if url.lower().startswith("file://") else url
    if rest.startswith("localhost/"):
        rest = rest[len("localhost"):]
    path = Path(unquote(rest))
    if not path.is_absolute():
        path = (root or Path.cwd()) / path
    return path
