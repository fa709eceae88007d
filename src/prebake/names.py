"""The one check for a name that becomes a path: project, stage, recipe, platform, release tag,
asset name and the fields of a lock entry.

Every such name is joined onto a folder somewhere (``.prebake/stages/<platform>/<stage>``, the
cache's ``downloads/<release>/<asset>``, a store's ``<release>/<asset>``), so a name that is not
one plain path component would let a ``prebake.toml``, a lock file or a command line reach
outside the folders prebake owns. Names are checked once, where they enter (the workspace
loader, the lock reader, the CLI), by :func:`check_name`; code further in may trust them.
A name that is not known gets :func:`did_you_mean`'s hint (the workspace's stages and
platforms, the toolchain environments).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

from prebake.errors import PrebakeError

MAX_NAME = 128
# one path component on every file system prebake targets: no separators, no control
# characters, no leading dot (".", "..", hidden files), nothing a shell or URL must quote
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+~-]*")


def name_problem(value: object) -> str | None:
    """Why ``value`` cannot be used as a name that becomes a path, ``None`` if it can."""
    if not isinstance(value, str):
        return f"must be a string, not {type(value).__name__}"
    if not value:
        return "must not be empty"
    if len(value) > MAX_NAME:
        return f"longer than {MAX_NAME} characters"
    if not _NAME.fullmatch(value):
        return (f"{shown(value)} is not a plain name (letters, digits and _ . + ~ -, "
                "not starting with '.' or '-')")
    return None


def check_name(value: object, what: str) -> str:
    """``value`` if it is a usable name; else a one-line ``PrebakeError`` saying ``what``."""
    problem = name_problem(value)
    if problem is not None:
        raise PrebakeError(f"{what}: {problem}")
    assert isinstance(value, str)
    return value


def shown(value: str, limit: int = 80) -> str:
    """``value`` for a one-line message: escaped (a newline or ESC cannot break or colour the
    line) and shortened in the middle when long (a 4 KB path is not a message)."""
    text = repr(value)
    if len(text) > limit:
        keep = (limit - 1) // 2
        text = f"{text[:keep]}…{text[-keep:]}"
    return text


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``choices``, else ``""``."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""
