"""``prebake link-test PATH --platform P``: link a tiny consumer with the platform's flags."""

from __future__ import annotations

import argparse
from pathlib import Path

NAME = "link-test"
HELP = "compile and link a tiny consumer against a library with the platform's consumer flags"
ORDER = 50


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", metavar="PATH", help="static archive or shared library")
    p.add_argument("--platform", metavar="P", required=True,
                   help="platform of prebake.toml (compiler, link_test flags, env)")
    p.add_argument("--symbol", dest="symbols", action="append", default=[], metavar="NAME",
                   help="reference this symbol (repeatable); without --symbol/--snippet every "
                        "member of an archive is linked (--whole-archive)")
    p.add_argument("--snippet", metavar="FILE", help="consumer source to compile instead")
    p.add_argument("--lang", choices=("c", "c++"), default=None,
                   help="language of --snippet (default: from its suffix)")
    p.add_argument("--include", dest="includes", action="append", default=[], metavar="DIR",
                   help="include folder (default: the include/ next to the library's lib/)")
    p.add_argument("--keep", metavar="DIR", help="build the consumer in DIR and keep it")
    p.add_argument("--json", action="store_true", help="machine-readable result")


def _default_includes(lib: Path) -> list[Path]:
    for parent in lib.resolve().parents:
        if parent.name == "lib" and (parent.parent / "include").is_dir():
            return [parent.parent / "include"]
    return []


def run(args: argparse.Namespace) -> int:
    from rich.markup import escape

    from prebake.commands._common import console, print_json
    from prebake.commands.check import load_platform
    from prebake.errors import PrebakeError
    from prebake.jsonio import SCHEMA_VERSION
    from prebake.link.test import link_test

    platform = load_platform(args.workspace, args.platform)
    lib = Path(args.path)
    snippet = lang = None
    if args.snippet:
        sp = Path(args.snippet)
        try:
            snippet = sp.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise PrebakeError(f"{sp}: cannot read snippet: {exc}") from None
        lang = args.lang or ("c" if sp.suffix == ".c" else "c++")
    includes = [Path(d) for d in args.includes] or _default_includes(lib)
    result = link_test(lib, platform, include_dirs=includes, snippet=snippet,
                       symbols=args.symbols, workdir=Path(args.keep) if args.keep else None,
                       lang=lang)
    if args.json:
        print_json({"schema_version": SCHEMA_VERSION, "path": str(lib),
                    "platform": platform.name, **result.to_json()})
    else:
        out = console()
        for cmd in result.commands:
            out.print(escape("$ " + " ".join(cmd)))
        if result.ok:
            out.print(f"[green]✓[/green] {escape(str(lib))} links for {escape(platform.name)}",
                      markup=True)
        else:
            out.print(f"[red]✗[/red] {escape(str(lib))}: link test failed at the "
                      f"{result.stage} step for {escape(platform.name)}:", markup=True)
            for line in result.errors:
                out.print("  " + escape(line))
    return 0 if result.ok else 1
