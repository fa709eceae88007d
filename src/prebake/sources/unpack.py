"""Unpack a downloaded source archive safely, optionally stripping leading path components.

Through ``prebake.extract.safe_extract``, the one extractor: all-or-nothing, hostile
archives rejected (absolute names, ``..``, links leaving the tree, devices, bombs), leading
folders stripped like ``tar --strip-components``.
"""

from __future__ import annotations

from pathlib import Path

from prebake.extract import safe_extract


def extract(archive: Path, dest: Path, *, strip_components: int = 0) -> Path:
    """Unpack into ``dest`` (replacing what it held), dropping ``strip_components`` levels."""
    safe_extract(archive, dest, strip_components=strip_components, replace=True)
    return dest
