"""Unpack a downloaded source archive safely, optionally stripping leading path components.

Through ``prebake.extract.safe_extract``, the one extractor: all-or-nothing, hostile
archives rejected (absolute names, ``..``, links leaving the tree, devices, bombs), leading
folders stripped like ``tar --strip-components``. A member named like the files prebake
itself writes in a source tree (``treeproof.OWN_NAMES``: a put-back's) is refused by name.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from prebake.errors import PrebakeError
from prebake.extract import safe_extract
from prebake.names import shown
from prebake.sources.treeproof import OWN_NAMES


def extract(archive: Path, dest: Path, *, strip_components: int = 0,
            members: Sequence[str] = (), skip: Sequence[str] = ()) -> Path:
    """Unpack into ``dest`` (replacing what it held), dropping ``strip_components`` levels;
    ``members``, when given, are the only paths written (each a file or a folder), and
    ``skip`` the paths left out."""

    def refuse_own_names(tree: Path) -> None:
        for path in sorted(tree.rglob(OWN_NAMES)):
            rel = path.relative_to(tree).as_posix()
            raise PrebakeError(f"{archive}: member {shown(rel, 120)}: a name prebake keeps for "
                               f"its own files in a source tree ({OWN_NAMES}); nothing was "
                               "unpacked")

    safe_extract(archive, dest, strip_components=strip_components, replace=True,
                 members=members or None, skip=skip, check=refuse_own_names)
    return dest
