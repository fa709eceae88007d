"""``prebake diff``: what changed for consumers between two releases of a dependency.

``assets`` compares assets, folders, binaries and the store's releases; ``side`` reads one
side, ``compare`` classifies the changes, ``markdown`` prints them.
"""

from prebake.diff.assets import (
    assets_in_store,
    build_summary,
    diff_against_store,
    diff_paths,
    download_verified,
    previous_in_store,
)
from prebake.diff.changes import Change, DiffResult, LibraryRow
from prebake.diff.compare import FACT_RULES, classify_fact, diff_sides
from prebake.diff.side import Side, library_key, load_side, side_from_manifest
from prebake.diff.versions import version_key

__all__ = [
    "FACT_RULES",
    "Change",
    "DiffResult",
    "LibraryRow",
    "Side",
    "assets_in_store",
    "build_summary",
    "classify_fact",
    "diff_against_store",
    "diff_paths",
    "diff_sides",
    "download_verified",
    "library_key",
    "load_side",
    "previous_in_store",
    "side_from_manifest",
    "version_key",
]
