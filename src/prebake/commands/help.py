"""``prebake help TOPIC``: the reference, generated from the code (as in docs/reference.md)."""

from __future__ import annotations

import argparse

NAME = "help"
HELP = "print the reference: prebake.toml keys, contract keys and presets, recipe API, placeholders"
ORDER = 95
TOPICS = ("toml", "contract", "recipes", "placeholders")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("topic", nargs="?", metavar="TOPIC",
                   help=f"one of {', '.join(TOPICS)} (default: all of docs/reference.md)")


def run(args: argparse.Namespace) -> int:
    import difflib

    from prebake.errors import PrebakeError
    from prebake.reference import render

    if args.topic is not None and args.topic not in TOPICS:
        close = difflib.get_close_matches(args.topic, TOPICS, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise PrebakeError(f"unknown help topic {args.topic!r}{hint}; topics: "
                           + ", ".join(TOPICS))
    print(render(args.topic), end="")
    return 0
