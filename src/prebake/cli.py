"""The command line: parse arguments, call the library, map errors to exit codes in one place.

Each subcommand lives in ``prebake.commands.<name>`` and exposes ``NAME``, ``HELP``, ``ORDER``,
``add_arguments(parser)`` and ``run(args) -> int``. Command modules import their heavy
dependencies inside ``run`` so that building the parser does no work.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
from collections.abc import Sequence
from types import ModuleType

from prebake import __version__
from prebake.errors import CheckFailed, PrebakeError


def _command_modules() -> list[ModuleType]:
    import prebake.commands as pkg

    mods = []
    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"prebake.commands.{info.name}")
        if hasattr(mod, "NAME") and hasattr(mod, "run"):
            mods.append(mod)
    mods.sort(key=lambda m: (getattr(m, "ORDER", 100), m.NAME))
    return mods


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, ModuleType]]:
    parser = argparse.ArgumentParser(
        prog="prebake",
        description="Build native dependencies per platform, prove their ABI, publish assets.",
        epilog="Exit status: 0 ok, 1 a check failed (contract violations, failed link test or "
               "build, breaking diff, disagreeing locks), 2 bad usage or bad input. Commands "
               "take --json for machine output.",
    )
    parser.add_argument("--version", action="version", version=f"prebake {__version__}")
    parser.add_argument(
        "-C",
        "--workspace",
        metavar="DIR",
        default=None,
        help="workspace folder holding prebake.toml (default: the current folder or a parent)",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    table: dict[str, ModuleType] = {}
    for mod in _command_modules():
        p = sub.add_parser(mod.NAME, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(p)
        table[mod.NAME] = mod
    return parser, table


def _err(message: str) -> None:
    print(f"prebake: error: {message}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    parser, table = build_parser()
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return 2
    debug = args.debug or bool(os.environ.get("PREBAKE_DEBUG"))
    try:
        return int(table[args.command].run(args))
    except CheckFailed as exc:
        if debug:
            raise
        _err(str(exc))
        return exc.exit_code
    except PrebakeError as exc:
        if debug:
            raise
        _err(str(exc))
        return exc.exit_code
    except KeyboardInterrupt:
        _err("interrupted")
        return 130
    except OSError as exc:
        if debug:
            raise
        where = f"{exc.filename}: " if exc.filename else ""
        _err(f"{where}{exc.strerror or exc}")
        return 2
    except Exception as exc:  # the one place that turns surprises into one line
        if debug:
            raise
        _err(f"internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)")
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
