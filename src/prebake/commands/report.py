"""``prebake report [--store URL] [--out DIR]``: a static HTML page for a store's releases.

The release matrix (dependency × platform: version, size, input hash, guard verdicts, key
facts), each release's diff to the previous version, and a size chart per dependency. No server
and no JavaScript: open ``DIR/index.html`` from disk or publish it as a CI artifact.
"""

from __future__ import annotations

import argparse

NAME = "report"
HELP = "write a static HTML release report (matrix, diffs, size charts) for a store"
ORDER = 65


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", metavar="URL",
                   help="store URL (default: $PREBAKE_STORE, else the workspace's default store)")
    p.add_argument("--out", metavar="DIR", default="prebake-report",
                   help="folder for index.html (default: ./prebake-report)")
    p.add_argument("--manifests-only", action="store_true",
                   help="diff from manifests only (no asset downloads; exports are not compared)")
    p.add_argument("--json", action="store_true", help="print where the report went as JSON")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from prebake.commands._common import console, err_console, print_json
    from prebake.commands._store import store_url, workspace_root
    from prebake.jsonio import SCHEMA_VERSION
    from prebake.report import write_report
    from prebake.store import open_store

    root = workspace_root(args)
    url = store_url(args.store, root)
    if "://" not in url or url.lower().startswith("file://"):
        from prebake.errors import PrebakeError
        from prebake.store import local_path

        folder = local_path(url, root)
        if not folder.is_dir():
            raise PrebakeError(f"{url}: no such store folder ({folder})")
    store = open_store(url, root=root or Path.cwd())
    status = err_console()

    def progress(msg: str) -> None:
        if not args.json:
            status.print(msg, markup=False, highlight=False)

    out = write_report(store, Path(args.out), download=not args.manifests_only,
                       progress=progress)
    if args.json:
        print_json({"schema_version": SCHEMA_VERSION, "store": store.url, "report": str(out)})
    else:
        console().print(f"report: {out}", markup=False)
    return 0
