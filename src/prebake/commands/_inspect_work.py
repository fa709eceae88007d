"""One ``inspect`` result, made in a worker process (or in this one): what a worker needs.

Apart from the command so that the pool's seed (``prebake.commands._early``) can load it
before the command line is parsed, and the workers it forks start with it: their job and
targets arrive pickled as these classes and functions.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from prebake.inspect.facts import Facts


@dataclass(slots=True)
class Target:
    """One result to produce: the binary ``file`` shown as ``name``, or an ``error`` for
    ``name``. ``rename`` maps the file's path to what is shown (asset members)."""

    name: str
    file: Path | None = None
    rename: tuple[str, str] | None = None
    error: str | None = None
    index: int = 0  # position in the output
    size: int = 0  # bytes of the file, when known: the biggest are read first
    arg: str = ""  # the command-line path it comes from
    # (temporary unpack folder, package name): evidence names the package, not the folder
    labels: tuple[tuple[str, str], ...] = ()


def reason(exc: Exception, name: str) -> str:
    return getattr(exc, "reason", None) or str(exc).removeprefix(f"{name}: ")


SPILL_AT = 1 << 20  # characters of output a worker sends through the pool's pipe; more: a file


@dataclass(frozen=True)
class Mode:
    """How a worker renders its results: the command's output options."""

    symbols: bool
    deep: bool
    json: bool
    color: bool
    direct: bool = False  # write to this process's stdout as pieces come (no pool)
    spill: str | None = None  # folder for a worker's big outputs


@dataclass
class Piece:
    """A worker's output for one target: text, or the file it spilled the text into."""

    text: bytes = b""
    file: str | None = None
    errors: list[tuple[str, str]] = field(default_factory=list)
    failed: bool = False


class _Collect:
    """The sink a worker renders into: stdout itself (no pool), memory, then a spill file.

    A big result (an archive's symbols) goes to a file the parent copies to stdout with
    ``sendfile``: no pickling, no pipe, and the worker holds one piece at a time.
    """

    def __init__(self, mode: Mode, index: int) -> None:
        self.mode, self.index = mode, index
        self.parts: list[str] = []
        self.size = 0
        self.fh: IO[bytes] | None = None
        self.file: str | None = None

    def __call__(self, text: str) -> None:
        if self.mode.direct:
            sys.stdout.write(text)
        elif self.fh is not None:
            self.fh.write(text.encode())
        else:
            self.parts.append(text)
            self.size += len(text)
            if self.size >= SPILL_AT and self.mode.spill is not None:
                self.file = str(Path(self.mode.spill) / f"{self.index}.out")
                self.fh = open(self.file, "wb")  # noqa: SIM115 (closed in piece())
                self.fh.write("".join(self.parts).encode())
                self.parts.clear()

    def piece(self) -> Piece:
        if self.fh is not None:
            self.fh.close()
            return Piece(file=self.file)
        return Piece(text="".join(self.parts).encode())


def _facts_of(target: Target, mode: Mode) -> Facts:
    from prebake.errors import PrebakeError
    from prebake.inspect import ParseOptions, inspect
    from prebake.inspect.facts import Facts

    if target.error is not None or target.file is None:
        return Facts(path=target.name, error=target.error)
    try:
        # the human view shows members' symbols only: no archive-level lists to build
        facts = inspect(target.file, ParseOptions(symbols=mode.symbols, deep=mode.deep,
                                                  archive_lists=mode.json))
    except PrebakeError as exc:
        return Facts(path=target.name, error=reason(exc, str(target.file)))
    except OSError as exc:
        return Facts(path=target.name, error=exc.strerror or str(exc))
    if target.rename is not None:
        old, new = target.rename
        for f in facts.walk():
            f.path = f.path.replace(old, new, 1)
    if target.labels:
        for f in facts.walk():
            for tmp, shown in target.labels:
                f.evidence = {k: [e.replace(tmp, shown) for e in ev]
                              for k, ev in f.evidence.items()}
    return facts


def job(mode: Mode, target: Target) -> Piece:
    """Read one target and produce its output (JSON object or human text)."""
    from prebake.inspect.render import json_pieces, text_pieces

    facts = _facts_of(target, mode)
    out = _Collect(mode, target.index)
    errors: list[tuple[str, str]] = []
    if mode.json:
        out(",\n    " if target.index else "\n    ")
        json_pieces(facts, out, symbols=mode.symbols)
    elif facts.error is not None:
        errors.append((facts.path, facts.error))
        if mode.direct:
            print_errors(errors)
            errors = []
    else:
        text_pieces(facts, out, symbols=mode.symbols, color=mode.color)
    piece = out.piece()
    piece.errors, piece.failed = errors, facts.error is not None
    return piece


def print_errors(errors: list[tuple[str, str]]) -> None:
    if errors:
        from rich.markup import escape

        from prebake.commands._common import err_console

        for path, error in errors:
            err_console().print(f"prebake: error: {escape(path)}: {escape(error)}")
