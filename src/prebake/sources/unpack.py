"""Unpack a downloaded source archive safely, optionally stripping leading path components.

Uses the store engineer's ``prebake.consume.unpack.safe_extract`` (all-or-nothing, hostile
archives rejected) when it is there; until then a local fallback with the same refusals for the
cases a source archive can hit (absolute names, ``..``, links leaving the tree, devices).
"""

from __future__ import annotations

import shutil
import tarfile
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

from prebake.errors import PrebakeError


def _fallback_extract(archive: Path, dest: Path) -> None:
    name = archive.name.lower()
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                p = PurePosixPath(info.filename)
                if p.is_absolute() or ".." in p.parts:
                    raise PrebakeError(f"{archive}: unsafe member name {info.filename!r}")
            zf.extractall(dest)
        return
    try:
        with tarfile.open(archive) as tf:
            seen: set[str] = set()
            for m in tf.getmembers():
                p = PurePosixPath(m.name)
                if p.is_absolute() or ".." in p.parts:
                    raise PrebakeError(f"{archive}: unsafe member name {m.name!r}")
                if m.name in seen:
                    raise PrebakeError(f"{archive}: duplicate member {m.name!r}")
                seen.add(m.name)
                if m.isdev() or m.isfifo():
                    raise PrebakeError(f"{archive}: device or fifo member {m.name!r}")
            tf.extractall(dest, filter="data")
    except tarfile.TarError as exc:
        raise PrebakeError(f"{archive}: not a readable archive ({name}): {exc}") from None


def extract(archive: Path, dest: Path, *, strip_components: int = 0) -> Path:
    """Unpack into ``dest`` (which must not exist yet), dropping ``strip_components`` levels."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".unpack-", dir=dest.parent) as tmp:
        stage = Path(tmp) / "x"
        stage.mkdir()
        try:
            from prebake.consume.unpack import safe_extract
        except ImportError:
            _fallback_extract(archive, stage)
        else:
            safe_extract(archive, stage)
        root = stage
        for _ in range(strip_components):
            kids = list(root.iterdir())
            if len(kids) != 1 or not kids[0].is_dir():
                raise PrebakeError(
                    f"{archive}: cannot strip a leading folder: the archive's top level holds "
                    f"{len(kids)} entries"
                )
            root = kids[0]
        if dest.exists():
            shutil.rmtree(dest)
        root.rename(dest)
    return dest
