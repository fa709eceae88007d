"""Shared helpers for command modules: console output, JSON output, workspace lookup."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from prebake.errors import PrebakeError

_stdout: Console | None = None


def console() -> Console:
    global _stdout
    if _stdout is None:
        _stdout = Console(soft_wrap=True, highlight=False)
        if not _stdout.is_terminal and "COLUMNS" not in os.environ:
            # CI logs and pipes: rich would assume 80 columns and cut asset names in tables
            _stdout = Console(soft_wrap=True, highlight=False, width=200)
    return _stdout


def err_console() -> Console:
    return Console(stderr=True, soft_wrap=True, highlight=False)


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def find_workspace(start: str | None) -> Path:
    """The folder holding ``prebake.toml``: ``-C DIR`` if given, else the nearest parent."""
    if start is not None:
        d = Path(start)
        if not (d / "prebake.toml").is_file():
            raise PrebakeError(f"{d}: no prebake.toml in this folder")
        return d
    here = Path.cwd()
    for d in (here, *here.parents):
        if (d / "prebake.toml").is_file():
            return d
    raise PrebakeError(f"{here}: no prebake.toml here or in any parent folder (use -C DIR)")
