"""``prebake agree LOCK…``: consumers of one host must lock the same version and asset."""

from __future__ import annotations

import argparse
from pathlib import Path

NAME = "agree"
HELP = "check that several prebake.lock files agree on each dependency's version and asset"
ORDER = 72


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("locks", nargs="+", metavar="LOCK")
    p.add_argument("--json", action="store_true", help="machine-readable result")


def run(args: argparse.Namespace) -> int:
    from prebake.commands._common import console, print_json
    from prebake.consume.agree import agree
    from prebake.jsonio import SCHEMA_VERSION

    found = agree([Path(p) for p in args.locks])
    if args.json:
        print_json({"schema_version": SCHEMA_VERSION, "ok": not found,
                    "disagreements": [d.to_json() for d in found]})
    else:
        for d in found:
            console().print(f"✗ {d.render()}", markup=False)
        if not found:
            console().print(f"✓ {len(args.locks)} lock(s) agree", markup=False)
    return 1 if found else 0
