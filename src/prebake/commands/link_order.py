"""``prebake link-order LIB… [--for OBJ…]``: static archives in the order a linker needs them."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

NAME = "link-order"
HELP = "order static archives from their symbols (cycles grouped) and list unresolved symbols"
ORDER = 60


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("libs", nargs="+", metavar="LIB", help="static archives (.a / .lib)")
    p.add_argument("--for", dest="for_objects", nargs="+", default=[], metavar="OBJ",
                   help="consumer objects: count only the members their link would pull in")
    p.add_argument("--format", choices=("ld", "ld64", "msvc", "cmake"), default="ld",
                   help="ld: groups cycles with --start-group; ld64/msvc: repeats archives; "
                        "cmake: a list with $<LINK_GROUP:RESCAN,…>")
    p.add_argument("--json", action="store_true", help="machine-readable result")


def run(args: argparse.Namespace) -> int:
    from prebake.link.order import compute_link_order

    lo = compute_link_order([Path(p) for p in args.libs], [Path(p) for p in args.for_objects])
    if args.json:
        from prebake.commands._common import print_json

        out = lo.to_json()
        out["rendered"] = lo.render(args.format)
        out["format"] = args.format
        print_json(out)
        return 0
    print(lo.render(args.format))
    # plain lines to stderr: rich (~15 ms to import) only for the coloured clash lines
    for g in lo.cycles():
        print(f"cycle: {' <-> '.join(p.name for p in g)}", file=sys.stderr)
    if lo.unused:
        print(f"not needed: {', '.join(p.name for p in lo.unused)}", file=sys.stderr)
    if lo.clashes:
        _print_clashes(lo.clashes)
    if lo.unresolved:
        names = list(lo.unresolved)
        more = f", … ({len(names) - 10} more)" if len(names) > 10 else ""
        print(f"{len(names)} symbol(s) no archive defines (system libraries or the "
              f"consumer must): {', '.join(names[:10])}{more}", file=sys.stderr)
    return 0


def _print_clashes(clashes: dict[str, list[Path]]) -> None:
    from rich.markup import escape

    from prebake.commands._common import err_console

    err = err_console()
    for sym, archives in list(clashes.items())[:10]:
        err.print(f"[yellow]clash[/yellow]: {escape(sym)} defined in "
                  f"{escape(', '.join(p.name for p in archives))}", markup=True)
