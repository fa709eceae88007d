"""Getting a recipe's sources into a unit's work dir: git, URL archives (sha256 + mirrors), local.

``describe`` gives the exact commands a fetch would run (for ``--dry-run``) without running them;
``materialize`` runs them (``materialize_all`` for a recipe's, its kept trees proven side by
side). Downloads go through the content-addressed ``SourceCache``.
"""

from __future__ import annotations

from prebake.sources.cache import SourceCache
from prebake.sources.fetch_source import (
    describe,
    git_commands,
    materialize,
    materialize_all,
    render_source,
)

__all__ = ["SourceCache", "describe", "git_commands", "materialize",
           "materialize_all", "render_source"]
