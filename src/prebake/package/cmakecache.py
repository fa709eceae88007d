"""What a CMake build enabled, read from its ``CMakeCache.txt``, for the manifest.

A recipe's flags say what it asked for; the cache says what CMake configured (an option a
project turns off for a target, a dependency switched off, a default it never read). The
manifest records the entries a recipe names (``Build.record``), taken from the cache itself.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from prebake.bounded import UnreadableFile, read_bounded
from prebake.errors import PrebakeError

MAX_CACHE = 32 << 20  # onnxruntime's is about 0.5 MB
_ENTRY = re.compile(r"^([A-Za-z0-9_.+\-/]+)(?::[A-Z]+)?=(.*)$")


class CacheError(PrebakeError):
    """The cache is missing, unreadable, or lacks an entry the recipe records."""


def parse(text: str) -> dict[str, str]:
    """``NAME:TYPE=VALUE`` lines; comments (``#``, ``//``) and other lines skipped."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith(("#", "//")):
            continue
        m = _ENTRY.match(line)
        if m is not None:
            out[m[1]] = m[2]
    return out


def recorded(path: Path, names: Sequence[str]) -> Mapping[str, str]:
    """The entries ``names`` of the cache at ``path``, in that order."""
    try:
        text = read_bounded(path, MAX_CACHE, "CMake cache").decode("utf-8", "replace")
    except FileNotFoundError:
        raise CacheError(f"{path}: no CMake cache, so what the build enabled cannot be "
                         "recorded") from None
    except (UnreadableFile, OSError) as exc:
        raise CacheError(f"{path}: {exc}") from None
    entries = parse(text)
    missing = [n for n in names if n not in entries]
    if missing:
        raise CacheError(f"{path}: has no {', '.join(missing)}: the recipe records what the "
                         "build never configured")
    return {n: entries[n] for n in names}
