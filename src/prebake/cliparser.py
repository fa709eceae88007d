"""The ``prebake`` argument parser: the top-level options and one sub-parser per command.

Apart from ``prebake.cli`` so that argparse is imported only once a parser is built.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any, NoReturn

from prebake import __version__
from prebake.printable import printable
from prebake.redact import env_secrets, redact_text


class _Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose subcommand parsers are made of this class too.

    Usage errors start ``prebake: error:`` like every other error (argparse would print
    ``prebake inspect: error:`` for a subcommand), after the usage line, exit status 2.
    """

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        print_error(message)
        raise SystemExit(2)


def _add_global_options(p: argparse.ArgumentParser, *, top: bool) -> None:
    """``-C`` and ``--debug``, on the main parser and again on every command's parser.

    One grammar: ``prebake -C DIR plan`` and ``prebake plan -C DIR`` mean the same. On a
    command's parser the defaults are suppressed, so an option given before the command is not
    reset by the command's parser.
    """
    default: Any = None if top else argparse.SUPPRESS
    p.add_argument(
        "-C",
        "--workspace",
        metavar="DIR",
        default=default,
        help="workspace folder holding prebake.toml (default: the current folder or a parent)",
    )
    p.add_argument("--debug", action="store_true",
                   default=False if top else argparse.SUPPRESS,
                   help="show tracebacks for errors")


_Sub = argparse._SubParsersAction  # the type add_subparsers returns (argparse names it private)


def _new_parser() -> tuple[_Parser, _Sub[_Parser]]:
    parser = _Parser(
        prog="prebake",
        description="Build native dependencies per platform, prove their ABI, publish assets.",
        epilog="Exit status: 0 ok, 1 a check failed (contract violations, failed link test or "
               "build, breaking diff, disagreeing locks), 2 bad usage or bad input, 141 the "
               "reader of the output stopped early (| head). Commands take --json for machine "
               "output.",
    )
    parser.add_argument("--version", action="version", version=f"prebake {__version__}")
    _add_global_options(parser, top=True)
    # `prebake --json plan` = `prebake plan --json` for the commands that have --json; its own
    # dest, because a command's parser would reset a shared `json` to its default (False)
    parser.add_argument("--json", dest="global_json", action="store_true",
                        help="machine-readable output (for the commands that have --json)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    return parser, sub


def build(mods: Sequence[ModuleType]) -> tuple[argparse.ArgumentParser, dict[str, ModuleType]]:
    parser, sub = _new_parser()
    table: dict[str, ModuleType] = {}
    for mod in mods:
        p = sub.add_parser(mod.NAME, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(p)
        _add_global_options(p, top=False)
        table[mod.NAME] = mod
    return parser, table


def print_error(message: str) -> None:
    """``prebake: error: …`` on stderr, for usage errors and every error ``main`` catches."""
    # an error may quote a URL or a value from the environment: never its credentials
    # and may quote what a remote or a file wrote: printed as text, never as escapes
    print(f"prebake: error: {printable(redact_text(message, *env_secrets(os.environ)))}",
          file=sys.stderr)
