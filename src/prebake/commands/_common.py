"""Shared helpers for command modules: console output, JSON output, workspace lookup."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from prebake.errors import PrebakeError
from prebake.printable import printable
from prebake.redact import env_secrets, redact_json, redact_text

_stdout: Console | None = None


class RedactingConsole(Console):
    """A console whose printed text goes through ``prebake.redact`` first (URL credentials,
    signed-URL parameters, the secret values of the caller's environment): the commands print
    URLs, commands and messages that may quote one; then through ``prebake.printable`` (no
    escape sequence, no control character, no workflow command: a message may quote what a
    command or a file wrote). Tables and other renderables are built from values redacted
    and made printable where they are made; text a command wrote is printed with
    ``markup=False`` (or escaped), never parsed as markup."""

    def print(self, *objects: Any, **kwargs: Any) -> None:
        secrets = env_secrets(os.environ)
        super().print(*(printable(redact_text(o, *secrets)) if isinstance(o, str) else o
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


# what json leaves raw with ensure_ascii=False and a terminal acts on: DEL, C1 (``\x9b`` is
# CSI), the bidirectional overrides
_JSON_RAW_CONTROL = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def print_json(obj: Any) -> None:
    """``--json`` output, redacted like every other output; every control character escaped
    (json escapes C0 itself), so a string a command wrote is data on a terminal too."""
    doc = redact_json(obj, *env_secrets(os.environ))
    text = json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False)
    sys.stdout.write(_JSON_RAW_CONTROL.sub(lambda m: f"\\u{ord(m[0]):04x}", text) + "\n")


def say(text: str, *, end: str = "\n", err: bool = False) -> None:
    """Plain ``print`` for the commands' text output, redacted like the rest."""
    print(printable(redact_text(text, *env_secrets(os.environ))), end=end,
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
