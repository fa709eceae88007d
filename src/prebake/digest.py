"""The one file hash: sha256 of a file's bytes, as hex (assets, sidecars, sources, trees).

A module of its own so that packaging, stores, sources, the plan and trust all share it
without importing each other.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

#: ``progress(done_bytes, total_bytes_or_None)``, called as bytes move.
ProgressFn = Callable[[int, int | None], None]

CHUNK = 1 << 20


def file_sha256(path: Path | str, progress: ProgressFn | None = None) -> str:
    """The hex sha256 of a file (``hashlib.file_digest`` when nobody watches; 1 MiB chunks
    with ``progress`` calls when someone does)."""
    with open(path, "rb") as fh:
        if progress is None:
            return hashlib.file_digest(fh, "sha256").hexdigest()
        h = hashlib.sha256()
        total = Path(path).stat().st_size
        done = 0
        while chunk := fh.read(CHUNK):
            h.update(chunk)
            done += len(chunk)
            progress(done, total)
        return h.hexdigest()
