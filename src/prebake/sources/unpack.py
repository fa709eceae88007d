"""Unpack a downloaded source archive safely, optionally stripping leading path components.

Through ``prebake.extract.safe_extract``, the one extractor: all-or-nothing, hostile
archives rejected (absolute names, ``..``, links leaving the tree, devices, bombs), leading
folders stripped like ``tar --strip-components``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from prebake.extract import safe_extract


def extract(archive: Path, dest: Path, *, strip_components: int = 0,
            members: Sequence[str] = (), skip: Sequence[str] = ()) -> Path:
    """Unpack into ``dest`` (replacing what it held), dropping ``strip_components`` levels;
    ``members``, when given, are the only paths written (each a file or a folder), and
    ``skip`` the paths left out."""
    safe_extract(archive, dest, strip_components=strip_components, replace=True,
                 members=members or None, skip=skip)
    return dest
