"""The command line: parse arguments, call the library, map errors to exit codes in one place.

Each subcommand lives in ``prebake.commands.<name>`` and exposes ``NAME``, ``HELP``, ``ORDER``,
``add_arguments(parser)`` and ``run(args) -> int``. Command modules import their heavy
dependencies inside ``run`` so that building the parser does no work.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any, NoReturn

from prebake import __version__
from prebake.errors import CheckFailed, PrebakeError


def _command_names() -> list[str]:
    """Module names in ``prebake.commands`` (a folder listing: pkgutil costs more to import)."""
    from pathlib import Path

    import prebake.commands as pkg

    names = set()
    for folder in pkg.__path__:
        for entry in Path(folder).iterdir():
            stem, dot, ext = entry.name.partition(".")
            if dot and ext == "py" and stem.isidentifier() and not stem.startswith("_"):
                names.add(stem)
    return sorted(names)


def _command_modules() -> list[ModuleType]:
    mods = []
    for name in _command_names():
        mod = importlib.import_module(f"prebake.commands.{name}")
        if hasattr(mod, "NAME") and hasattr(mod, "run"):
            mods.append(mod)
    mods.sort(key=lambda m: (getattr(m, "ORDER", 100), m.NAME))
    return mods


def _columns() -> int:
    """``shutil.get_terminal_size().columns``, without importing shutil (it pulls in zlib, bz2
    and lzma: ~2 ms of every start-up, since argparse builds a formatter per argument)."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    out = sys.__stdout__
    try:
        return (os.get_terminal_size(out.fileno()).columns if out is not None else 0) or 80
    except (AttributeError, ValueError, OSError):
        return 80


class _Formatter(argparse.HelpFormatter):
    """argparse's default formatter, as wide as argparse would make it (``_columns() - 2``)."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None, **kwargs: Any) -> None:
        super().__init__(prog, indent_increment, max_help_position,
                         _columns() - 2 if width is None else width, **kwargs)


class _Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` using ``_Formatter``; subcommand parsers are made of this class too.

    Usage errors start ``prebake: error:`` like every other error (argparse would print
    ``prebake inspect: error:`` for a subcommand), after the usage line, exit status 2.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        _err(message)
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
               "build, breaking diff, disagreeing locks), 2 bad usage or bad input. Commands "
               "take --json for machine output.",
    )
    parser.add_argument("--version", action="version", version=f"prebake {__version__}")
    _add_global_options(parser, top=True)
    # `prebake --json plan` = `prebake plan --json` for the commands that have --json; its own
    # dest, because a command's parser would reset a shared `json` to its default (False)
    parser.add_argument("--json", dest="global_json", action="store_true",
                        help="machine-readable output (for the commands that have --json)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    return parser, sub


def _build(mods: Sequence[ModuleType]) -> tuple[argparse.ArgumentParser, dict[str, ModuleType]]:
    parser, sub = _new_parser()
    table: dict[str, ModuleType] = {}
    for mod in mods:
        p = sub.add_parser(mod.NAME, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(p)
        _add_global_options(p, top=False)
        table[mod.NAME] = mod
    return parser, table


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, ModuleType]]:
    return _build(_command_modules())


def _named_command(argv: Sequence[str]) -> ModuleType | None:
    """The one command module ``argv`` names, when the global options before it are plain.

    Lets ``main`` parse with that command alone instead of importing all of them. Anything
    unusual before the command (``-h``, ``--version``, an abbreviated option, an unknown
    command) returns None and gets the full parser, so help and errors stay the same.
    """
    i = 0
    while i < len(argv):
        tok = argv[i]
        if tok in ("-C", "--workspace"):
            i += 2
        elif tok in ("--debug", "--json") or tok.startswith("--workspace=") or (
                tok.startswith("-C") and len(tok) > 2):
            i += 1
        elif tok.startswith("-"):
            return None
        else:
            break
    else:
        return None
    name = argv[i]
    stem = name.replace("-", "_")
    if not stem.isidentifier() or stem.startswith("_") or stem not in _command_names():
        return None
    mod = importlib.import_module(f"prebake.commands.{stem}")
    if getattr(mod, "NAME", None) != name or not hasattr(mod, "run"):
        return None
    return mod


def entry() -> NoReturn:
    """The ``prebake`` command: ``main``, then an exit without the interpreter's teardown.

    Tearing down the modules and objects of a run costs 8 ms of every command (11 ms against
    3), most of a small run's time after its work. What an exit must do is still done:
    stdout and stderr are flushed and the ``atexit`` functions run (temporary folders'
    finalizers among them). With another thread alive, or a stream that cannot be flushed
    (a closed pipe), Python's own exit handles it as always.
    """
    code = main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        raise SystemExit(code) from None
    threading = sys.modules.get("threading")
    if threading is not None and threading.active_count() > 1:
        raise SystemExit(code)
    import atexit

    atexit._run_exitfuncs()
    os._exit(code)


def _short(path: str, limit: int = 160) -> str:
    """A path for a one-line message: a 4 KB path keeps its two ends."""
    return path if len(path) <= limit else f"{path[:60]}…{path[-(limit - 61):]}"


def _err(message: str) -> None:
    from prebake.redact import env_secrets, redact_text

    # an error may quote a URL or a value from the environment: never its credentials
    print(f"prebake: error: {redact_text(message, *env_secrets(os.environ))}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    one = _named_command(argv)
    prestart = getattr(one, "prestart", None)
    if prestart is not None:  # work the command line certainly asks for may start now
        prestart(argv)
    parser, table = _build([one]) if one is not None else build_parser()
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return 2
    if args.global_json:
        if not hasattr(args, "json"):
            parser.error(f"{args.command} has no --json output")
        args.json = True
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
        where = f"{_short(str(exc.filename))}: " if exc.filename else ""
        _err(f"{where}{exc.strerror or exc}")
        return 2
    except Exception as exc:  # the one place that turns surprises into one line
        if debug:
            raise
        _err(f"internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)")
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
