"""The command line: parse arguments, call the library, map errors to exit codes in one place.

Each subcommand lives in ``prebake.commands.<name>`` and exposes ``NAME``, ``HELP``, ``ORDER``,
``add_arguments(parser)`` and ``run(args) -> int``. Command modules import their heavy
dependencies inside ``run`` so that building the parser does no work.

This module imports nothing heavy at its top (not even ``typing``): a command with work to
start before its line is parsed (``EARLY``) starts it first thing, and every import made
before that is time the work waits for.
"""

from __future__ import annotations

import importlib
import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence
    from types import ModuleType
    from typing import NoReturn

# command -> the light module whose ``prestart(args)`` (the command's own arguments) runs
# before anything else is imported
EARLY = {"inspect": "prebake.commands._early"}


def _command_names() -> list[str]:
    """Module names in ``prebake.commands`` (a folder listing: pkgutil costs more to import)."""
    import prebake.commands as pkg

    names = set()
    for folder in pkg.__path__:
        for entry in os.listdir(folder):  # noqa: PTH208 (pathlib: 5 ms before prestart)
            stem, dot, ext = entry.partition(".")
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


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, ModuleType]]:
    from prebake.cliparser import build

    return build(_command_modules())


def _named_command(name: str | None) -> ModuleType | None:
    """The module of the one command ``argv`` names (``_command_name``), if any.

    Lets ``main`` parse with that command alone instead of importing all of them. Anything
    unusual before the command (``-h``, ``--version``, an abbreviated option, an unknown
    command) has no name and gets the full parser, so help and errors stay the same.
    """
    if name is None:
        return None
    mod = importlib.import_module(f"prebake.commands.{name.replace('-', '_')}")
    if getattr(mod, "NAME", None) != name or not hasattr(mod, "run"):
        return None
    return mod


def _command_name(argv: Sequence[str]) -> tuple[str | None, int]:
    """The command ``argv`` names after plain global options, if it is one (nothing imported),
    and where its own arguments start."""
    i = 0
    while i < len(argv):
        tok = argv[i]
        if tok in ("-C", "--workspace"):
            i += 2
        elif tok in ("--debug", "--json") or tok.startswith("--workspace=") or (
                tok.startswith("-C") and len(tok) > 2):
            i += 1
        elif tok.startswith("-"):
            return None, 0
        else:
            break
    else:
        return None, 0
    name = argv[i]
    stem = name.replace("-", "_")
    if not stem.isidentifier() or stem.startswith("_") or stem not in _command_names():
        return None, 0
    return name, i + 1


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
    except BrokenPipeError:
        _stdout_gone()
        raise SystemExit(PIPE_CLOSED) from None
    except (OSError, ValueError):
        raise SystemExit(code) from None
    threading = sys.modules.get("threading")
    if threading is not None and threading.active_count() > 1:
        raise SystemExit(code)
    import atexit

    atexit._run_exitfuncs()
    os._exit(code)


# The status a shell reports for a C tool that SIGPIPE ended (``nm big.a | head``): what a
# pipeline, ``set -o pipefail`` included, sees when prebake's reader leaves early.
PIPE_CLOSED = 128 + 13


def _stdout_gone() -> None:
    """The reader of stdout left: stdout now goes to /dev/null, so that no later write or
    the exit's flush fails again (the end is quiet, and the ``atexit`` clean-up still runs)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass  # no real stdout to point anywhere
    finally:
        os.close(devnull)


def _short(path: str, limit: int = 160) -> str:
    """A path for a one-line message: a 4 KB path keeps its two ends."""
    return path if len(path) <= limit else f"{path[:60]}…{path[-(limit - 61):]}"


def _err(message: str) -> None:
    from prebake.cliparser import print_error

    print_error(message)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    name, args_at = _command_name(argv)
    early = EARLY.get(name or "")
    if early is not None:  # work the command line certainly asks for may start now
        importlib.import_module(early).prestart(argv[args_at:])
    from prebake.errors import CheckFailed, PrebakeError

    one = _named_command(name)
    if one is not None:
        from prebake.cliparser import build

        parser, table = build([one])
    else:
        parser, table = build_parser()
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
    except BrokenPipeError:  # `| head` stopped reading: not an error, and nothing to say
        _stdout_gone()
        return PIPE_CLOSED
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
