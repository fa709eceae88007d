"""The command line: parse arguments, call the library, map errors to exit codes in one place.

Each subcommand lives in ``prebake.commands.<name>`` and exposes ``NAME``, ``HELP``, ``ORDER``,
``add_arguments(parser)`` and ``run(args) -> int``. Command modules import their heavy
dependencies inside ``run`` so that building the parser does no work.
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse


def _command_modules() -> list[ModuleType]:
    """Every module in ``prebake.commands`` that is a command, in help order."""
    import prebake.commands as pkg

    names = {entry.removesuffix(".py") for folder in pkg.__path__
             for entry in os.listdir(folder)  # noqa: PTH208 (names only)
             if entry.endswith(".py") and not entry.startswith("_")}
    mods = []
    for name in sorted(names):
        mod = importlib.import_module(f"prebake.commands.{name}")
        if hasattr(mod, "NAME") and hasattr(mod, "run"):
            mods.append(mod)
    mods.sort(key=lambda m: (getattr(m, "ORDER", 100), m.NAME))
    return mods


def build_parser(argv: Sequence[str] | None = None
                 ) -> tuple[argparse.ArgumentParser, dict[str, ModuleType]]:
    """The parser, with every command's sub-parser; with ``argv``, only what it needs: the
    command it names (importing every command module and building its parser was a third of
    ``prebake inspect``'s start-up), or none for ``--version``. Anything else (no command, a
    misspelt one, top-level help) gets them all, so help and errors list every command."""
    from prebake.cliparser import build

    if argv is not None:
        named = _named_command(argv)
        if named is not None:
            return build(named)
    return build(_command_modules())


# the top-level options that take a value (``-C DIR``): the word after them is no command
_VALUED = ("-C", "--workspace")


def _named_command(argv: Sequence[str]) -> list[ModuleType] | None:
    """The command modules ``argv`` needs, when it says so before any word argparse could read
    otherwise: ``[module]`` for its first word that is neither an option nor ``-C``'s value,
    ``[]`` for a ``--version`` before it; None (build them all) for the rest."""
    import prebake.commands as pkg

    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg == "--version":
            return []  # argparse prints it and exits as it meets it: no command is read
        if arg in _VALUED:
            skip = True
            continue
        if arg.startswith("-"):
            if arg in ("-h", "--help", "--") or arg.startswith("---"):
                return None
            continue
        name = arg.replace("-", "_")
        if not name.isidentifier() or name.startswith("_") or not any(
                os.path.isfile(os.path.join(folder, name + ".py"))  # noqa: PTH113, PTH118
                for folder in pkg.__path__):
            return None
        mod = importlib.import_module(f"prebake.commands.{name}")
        return [mod] if getattr(mod, "NAME", None) == arg and hasattr(mod, "run") else None
    return None


class Terminated(KeyboardInterrupt):
    """SIGTERM (a cancelled CI job, ``kill``), unwound like Ctrl-C: a build kills its
    commands' process groups and publishes nothing, temporary folders are removed. Left to
    the default action, the interpreter would die at once and leave make and every compiler
    under it running, writing into a tree the next build reuses."""


TERMINATED = 128 + signal.SIGTERM


def _on_sigterm(_signum: int, _frame: object) -> None:
    raise Terminated


def entry() -> None:
    """The ``prebake`` command."""
    signal.signal(signal.SIGTERM, _on_sigterm)
    code = main()
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _stdout_gone()
        code = PIPE_CLOSED
    raise SystemExit(code)


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
    from prebake.errors import CheckFailed, PrebakeError

    words = sys.argv[1:] if argv is None else list(argv)
    parser, table = build_parser(words)
    args = parser.parse_args(words)
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
    except Terminated:
        _err("terminated")
        return TERMINATED
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
    except MemoryError:  # a memory limit (ulimit -v, a container) met: the machine's, no bug
        if debug:
            raise
        _err("out of memory: this input needs more than the process may use (a memory limit?)")
        return 2
    except Exception as exc:  # the one place that turns surprises into one line
        if debug:
            raise
        _err(f"internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)")
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
