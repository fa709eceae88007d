"""Unpack a downloaded source archive safely, optionally stripping leading path components.

Through ``prebake.consume.unpack.safe_extract``, the one extractor: all-or-nothing, hostile
archives rejected (absolute names, ``..``, links leaving the tree, devices, bombs).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from prebake.consume.unpack import safe_extract
from prebake.errors import PrebakeError


def extract(archive: Path, dest: Path, *, strip_components: int = 0) -> Path:
    """Unpack into ``dest`` (which must not exist yet), dropping ``strip_components`` levels."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".unpack-", dir=dest.parent) as tmp:
        stage = Path(tmp) / "x"
        stage.mkdir()
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
