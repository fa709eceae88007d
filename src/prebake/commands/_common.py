"""Shared helpers for command modules: console output, JSON output, workspace lookup."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from prebake.errors import PrebakeError
from prebake.redact import env_secrets, redact_json, redact_text

_stdout: Console | None = None


class RedactingConsole(Console):
    """A console whose printed text goes through ``prebake.redact`` first (URL credentials,
    signed-URL parameters, the secret values of the caller's environment): the commands print
    URLs, commands and messages that may quote one. Tables and other renderables are built
    from values redacted where they are made."""

    def print(self, *objects: Any, **kwargs: Any) -> None:
        secrets = env_secrets(os.environ)
        super().print(*(redact_text(o, *secrets) if isinstance(o, str) else o
                        for o in objects), **kwargs)


def console() -> Console:
    global _stdout
    if _stdout is None:
        _stdout = RedactingConsole(soft_wrap=True, highlight=False)
        if not _stdout.is_terminal and "COLUMNS" not in os.environ:
            # CI logs and pipes: rich would assume 80 columns and cut asset names in tables
            _stdout = RedactingConsole(soft_wrap=True, highlight=False, width=200)
    return _stdout


def err_console() -> Console:
    return RedactingConsole(stderr=True, soft_wrap=True, highlight=False)


def print_json(obj: Any) -> None:
    """``--json`` output, redacted like every other output."""
    doc = redact_json(obj, *env_secrets(os.environ))
    sys.stdout.write(json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def say(text: str, *, end: str = "\n", err: bool = False) -> None:
    """Plain ``print`` for the commands' text output, redacted like the rest."""
    print(redact_text(text, *env_secrets(os.environ)), end=end,
          file=sys.stderr if err else sys.stdout)


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
