"""``prebake diff OLD NEW [--json] [--allow-breaking]``: what a release changes for consumers.

Each side is a ``.tar.xz`` asset, a folder (an unpacked prefix or a tree of binaries) or one
binary. Prints markdown fit for a CI step summary (``>> $GITHUB_STEP_SUMMARY``) or ``--json``.
Exit 1 when any change is breaking, unless ``--allow-breaking``; 2 on bad input.
"""

from __future__ import annotations

import argparse

NAME = "diff"
HELP = "compare two releases (assets, folders or binaries): exports, ABI facts, archives, headers"
ORDER = 60


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("old", metavar="OLD", help="the previous release: asset, folder or binary")
    p.add_argument("new", metavar="NEW", help="the new release: asset, folder or binary")
    p.add_argument("--json", action="store_true", help="machine-readable output (schema_version 1)")
    p.add_argument("--allow-breaking", action="store_true",
                   help="exit 0 even when a change breaks consumers (still reported)")
    p.add_argument("--max-rows", type=int, default=200, metavar="N",
                   help="changes listed per table in the markdown (default 200)")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from prebake.commands._common import print_json
    from prebake.diff import diff_paths

    result = diff_paths(Path(args.old), Path(args.new))
    if args.json:
        payload = result.to_json()
        payload["allow_breaking"] = bool(args.allow_breaking)
        print_json(payload)
    else:
        import sys

        from prebake.diff.markdown import markdown

        sys.stdout.write(markdown(result, max_rows=max(1, args.max_rows)) + "\n")
    return 1 if result.breaking and not args.allow_breaking else 0
