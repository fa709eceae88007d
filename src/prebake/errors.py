"""Error classes that carry their exit code, caught in one place (``prebake.cli``).

Exit codes are part of the CLI contract (docs/architecture.md, "CLI contract"): 0 ok, 1 a check
failed, 2 bad usage or input.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def one_line(text: str) -> str:
    """``text`` with its control characters escaped (``\\n``, ``\\x1b``): a key or value
    echoed from a file (a TOML quoted key may hold a newline) can neither break the line nor
    colour the terminal."""
    return _CONTROL.sub(lambda m: repr(m[0])[1:-1], text)


class PrebakeError(Exception):
    """Bad input or usage: one clear line (or block) for the user, exit code 2, no traceback."""

    exit_code = 2


class FormatError(PrebakeError):
    """A binary could not be parsed: truncated, hostile, or not a format prebake knows."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.reason = message


@dataclass(frozen=True)
class Problem:
    """One thing wrong in a configuration file, located by key path (and line when known)."""

    key: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.key}" + (f" (line {self.line})" if self.line else "")
        return f"{where}: {self.message}"


class ConfigError(PrebakeError):
    """Every problem of one configuration file at once, so a user fixes them in one pass.

    One problem is one line, ``file:line: key: message`` as compilers print it (editors jump
    to it); several are a count, then one such line each.
    """

    def __init__(self, file: str, problems: Sequence[Problem]) -> None:
        self.file = file
        self.problems = list(problems)
        located = [one_line(f"{file}:{p.line}: {p.key}: {p.message}" if p.line
                            else f"{file}: {p.key}: {p.message}") for p in self.problems]
        if len(located) == 1:
            text = located[0]
        else:
            text = "\n".join([f"{file}: {len(located)} problems", *(f"  {x}" for x in located)])
        super().__init__(text)


class CheckFailed(Exception):
    """A guard found violations (exit code 1). The payload is what the CLI renders."""

    exit_code = 1

    def __init__(self, message: str, payload: object = None) -> None:
        super().__init__(message)
        self.payload = payload
