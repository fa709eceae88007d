"""``file://`` store: a folder with one sub-folder per release (``releases/continuous/…``).

The embedded default (``file://./releases``, relative to the workspace root). Publishing copies
the asset under a temporary name and renames it into place; the ``.sha256`` sidecar (the commit
marker) is removed first and written last, so a reader never lists a partial asset.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

if sys.platform != "win32":  # Windows has no advisory locks (``name_lock`` is a no-op)
    import fcntl

from prebake import jsonio
from prebake.bounded import UnreadableFile, read_bounded_or_none
from prebake.errors import PrebakeError
from prebake.names import check_name, name_problem
from prebake.package.naming import MAX_ASSET_BYTES, TRUST_SIDECAR_SUFFIXES, AssetId
from prebake.store.base import (
    DEFAULT_RELEASE,
    ProgressFn,
    StoreError,
    bound_words,
    complete_assets,
    local_path,
    prepare_publish,
    sidecar_limit,
)

_CHUNK = 1 << 20


def copy_with_progress(src: Path, dest: Path, progress: ProgressFn | None) -> None:
    """Copy ``src`` to ``dest`` through a temporary sibling, fsync'd, renamed into place."""
    total = src.stat().st_size
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
    try:
        done = 0
        with open(src, "rb") as fin, os.fdopen(fd, "wb") as fout:
            while chunk := fin.read(_CHUNK):
                fout.write(chunk)
                done += len(chunk)
                if progress:
                    progress(done, total)
            fout.flush()
            os.fsync(fout.fileno())
        Path(tmp).chmod(0o644)
        Path(tmp).replace(dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def name_lock(folder: Path, filename: str, *, exclusive: bool) -> Iterator[None]:
    """An advisory lock per asset name of a release folder, kept in the store's hidden
    ``.locks/<release>/`` (never among the release's files): publishers of one name take it
    exclusively, readers shared. The kernel drops it when a holder dies, so a SIGKILLed
    publisher never blocks the next one. A reader that cannot create the lock (a read-only
    mount, where nobody publishes) reads without it; without ``fcntl`` (Windows) it is a no-op.
    """
    if sys.platform == "win32":
        yield
        return
    lock = folder.parent / ".locks" / folder.name / f"{filename}.lock"
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
        fh = open(lock, "a")  # noqa: SIM115 (closed below)
    except OSError:
        if exclusive:
            raise
        yield
        return
    with fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def remove_stale_temporaries(folder: Path, aid: AssetId) -> list[str]:
    """Temporary files (``.<file>.XXXX.tmp``) of earlier publishers of ``aid``'s files; called
    under the name's exclusive lock, so none of them belongs to a live publisher."""
    names = {aid.filename, aid.sha256_name, aid.manifest_name,
             *(aid.filename + s for s in TRUST_SIDECAR_SUFFIXES)}
    removed = []
    for p in folder.glob(".*.tmp"):
        owner = p.name[1:].rsplit(".", 2)[0]
        if owner in names:
            p.unlink(missing_ok=True)
            removed.append(p.name)
    return removed


def _check_tag(release: str) -> str:
    return check_name(release, "release tag")


class LocalStore:
    """A folder on disk (or a shared mount)."""

    writable = True

    def __init__(self, url: str, path: Path) -> None:
        self.url = url
        self.path = path

    def _dir(self, release: str | None) -> Path:
        return self.path / _check_tag(release or DEFAULT_RELEASE)

    def releases(self) -> list[str]:
        if not self.path.is_dir():
            return []
        return sorted(p.name for p in self.path.iterdir()
                      if p.is_dir() and name_problem(p.name) is None)

    def list_assets(self, release: str | None = None) -> list[AssetId]:
        tags = [release] if release else self.releases()
        found: set[AssetId] = set()
        for tag in tags:
            d = self._dir(tag)
            if d.is_dir():
                found.update(complete_assets({p.name for p in d.iterdir()}))
        return sorted(found)

    def read_sidecar(self, asset: AssetId, suffix: str, release: str | None = None) -> bytes | None:
        d = self._dir(release)
        if not (d / asset.filename).is_file():
            return None
        name = asset.filename + suffix
        try:
            with name_lock(d, asset.filename, exclusive=False):
                return read_bounded_or_none(d / name, sidecar_limit(suffix), "sidecar")
        except UnreadableFile as exc:  # a symlink to /dev/zero, a FIFO, a 2 GB "checksum"
            raise StoreError(f"{self.url}: {name}: {exc.reason}") from None

    def download(self, asset: AssetId, dest: Path, release: str | None = None, *,
                 progress: ProgressFn | None = None, limit: int | None = None) -> Path:
        src = self._dir(release) / asset.filename
        if not src.is_file():
            raise PrebakeError(f"{self.url}: no {asset.filename} in release "
                               f"{release or DEFAULT_RELEASE}")
        with name_lock(src.parent, asset.filename, exclusive=False):
            size = src.stat().st_size
            if size > (MAX_ASSET_BYTES if limit is None else limit):
                raise StoreError(f"{self.url}: {asset.filename}: {size} bytes, "
                                 f"{bound_words(limit)}; nothing copied")
            copy_with_progress(src, dest, progress)
        dest.with_name(dest.name + ".part").unlink(missing_ok=True)  # nothing to resume here
        return dest

    def publish(self, asset_path: Path, release: str | None = None, *,
                progress: ProgressFn | None = None) -> AssetId:
        ps = prepare_publish(asset_path)
        d = self._dir(release)
        d.mkdir(parents=True, exist_ok=True)
        final = d / ps.aid.filename
        if final.resolve() == ps.asset.resolve():
            return ps.aid  # publishing an asset onto itself: already there, complete
        # one publisher of a name at a time: without it, racing uploads left the .sha256 of
        # one beside the bytes of another and every later fetch failed as "tampered"
        with name_lock(d, ps.aid.filename, exclusive=True):
            remove_stale_temporaries(d, ps.aid)  # of publishers that died holding this name
            (d / ps.aid.sha256_name).unlink(missing_ok=True)  # hide the old asset first
            copy_with_progress(ps.asset, final, progress)
            jsonio.atomic_write_bytes(d / ps.aid.manifest_name, ps.manifest_file.read_bytes())
            for name in ps.stale_extras():
                (d / name).unlink(missing_ok=True)
            for extra in ps.extras:
                jsonio.atomic_write_bytes(d / extra.name, extra.read_bytes())
            jsonio.atomic_write_bytes(d / ps.aid.sha256_name, ps.sha256_file.read_bytes())
        return ps.aid

    def asset_url(self, asset: AssetId, release: str | None = None) -> str:
        return (self._dir(release) / asset.filename).resolve().as_uri()


def open_local(url: str, root: Path | None) -> LocalStore:
    return LocalStore(url, local_path(url, root))
