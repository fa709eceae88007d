"""``prebake pin NAME VERSION``: bump a pin and lock the digests of the sources it names."""

from __future__ import annotations

import argparse

NAME = "pin"
HELP = ("set a pin in prebake.toml and lock the sha256 of every source URL it resolves to "
        "and the commit of every git ref (prebake.sources.lock); --check lists units whose "
        "URLs or git refs are not locked, or whose git refs moved upstream")
ORDER = 8


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", nargs="?", metavar="NAME", help="the pin to set (a key of [pins])")
    p.add_argument("version", nargs="?", metavar="VERSION", help="its new value")
    p.add_argument("--platform", metavar="P", action="append", default=[],
                   help="lock only this platform's URLs (repeatable; default: every platform)")
    p.add_argument("--check", action="store_true",
                   help="change nothing: exit 1 listing units whose URLs have no digest in "
                        "prebake.sources.lock, or whose git refs have no locked commit or "
                        "name another one upstream now (asks each remote; for CI)")
    p.add_argument("--json", action="store_true", help="machine-readable result")


def run(args: argparse.Namespace) -> int:
    from prebake.commands._common import console, err_console, find_workspace, print_json
    from prebake.errors import PrebakeError
    from prebake.intake import load_workspace
    from prebake.jsonio import SCHEMA_VERSION
    from prebake.redact import redact_text
    from prebake.sources.lock import GitRef, lock_key
    from prebake.sources.pinning import check, pin

    ws = load_workspace(find_workspace(args.workspace))
    con = console()

    def say(text: str) -> None:  # every line shown is redacted: URLs may carry credentials
        con.print(redact_text(text), markup=False)

    if args.check:
        if args.name or args.platform:
            raise PrebakeError("pin --check takes no NAME, VERSION or --platform")
        problems = check(ws)
        if args.json:
            print_json({"schema_version": SCHEMA_VERSION, "ok": not problems,
                        "unlocked": [{"unit": u, "url": r.url, "status": st,
                                      "command": r.command} for u, r, st in problems]})
        else:
            for unit, ref, st in problems:
                what = f"git {ref.url} at {ref.ref}" if isinstance(ref, GitRef) else ref.url
                if st in ("missing", "pending"):
                    say(f"✗ {unit}: {what} is {st} in prebake.sources.lock "
                        f"(run `{ref.command}`)")
                else:
                    say(f"✗ {unit}: {what}: {st} (run `{ref.command}` if that is intended)")
            if not problems:
                say("✓ every source URL and git ref is locked")
        return 1 if problems else 0
    if not args.name or not args.version:
        raise PrebakeError("pin needs NAME and VERSION (or --check)")
    err = err_console()
    result = pin(ws, args.name, args.version, platforms=args.platform,
                 log=lambda m: err.print(redact_text(m), markup=False, highlight=False))
    if args.json:
        print_json({"schema_version": SCHEMA_VERSION, "name": result.name, "old": result.old,
                    "new": result.new, "lock": str(result.lock.path),
                    "locked": sorted({r.url for r in result.locked}),
                    "pending": [{"url": r.url, "platform": r.platform, "reason": why}
                                for r, why in result.pending],
                    "notes": result.notes, "ok": not result.pending})
    else:
        say(f"pinned {result.name} = {result.new} (was {result.old}) in prebake.toml")
        for url in sorted({r.url for r in result.locked}):
            e = result.lock.entries[lock_key(url)]
            say(f"✓ locked {url}  sha256 {e.sha256}  {e.size} bytes")
        for gref, commit, was in {(g.url, g.ref): (g, c, w) for g, c, w in result.git}.values():
            moved = f" (was {was})" if was and was != commit else ""
            say(f"✓ locked git {gref.url} at {gref.ref}  commit {commit}{moved}")
        for note in result.notes:
            say(f"  {note}")
        for ref, why in result.pending:
            say(f"✗ pending {ref.url} ({ref.recipe} on {ref.platform}): {why}")
        if result.pending:
            say(f"{len(result.pending)} URL(s) pending: units needing them are refused until "
                f"`prebake pin {result.name} {result.new}` runs where their host is reachable")
    return 1 if result.pending else 0
