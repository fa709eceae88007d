"""Where prebake's cache lives, on the ground floor: the source cache and the toolchain
environments both sit under it, and neither package may import the other for a path."""

from __future__ import annotations

import os
from pathlib import Path


def default_cache_dir() -> Path:
    """``$PREBAKE_CACHE`` or ``$XDG_CACHE_HOME/prebake`` or ``~/.cache/prebake``."""
    if env := os.environ.get("PREBAKE_CACHE"):
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "prebake"
