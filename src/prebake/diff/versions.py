"""Ordering release versions (``1.9.0 < 1.10.0``, ``1.28.0rc1 < 1.28.0``) without a dependency:
dotted numbers compare numerically; a pre-release tag sorts before the plain release."""

from __future__ import annotations

import re

_PART = re.compile(r"\d+|[A-Za-z]+")


def version_key(version: str) -> tuple[tuple[int, int | str], ...]:
    """A sort key: numbers as numbers; a letter run (``rc``, ``beta``) sorts below the end of
    the version, so ``1.0rc1 < 1.0``; ties keep strings comparable."""
    key: list[tuple[int, int | str]] = []
    for part in _PART.findall(version):
        key.append((2, int(part)) if part.isdigit() else (0, part.lower()))
    key.append((1, ""))
    return tuple(key)
