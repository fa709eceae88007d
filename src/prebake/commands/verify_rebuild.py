"""``prebake verify-rebuild ASSET``: rebuild a published asset in a fresh folder and compare.

The asset's manifest (its ``.json`` sidecar, ``--manifest``, or the one inside it) names the
unit and its input hash; the workspace (``-C``) with its ``prebake.sources.lock`` must plan
that unit with the same inputs. The rebuild shares no compiler launcher or cache with the
caller (``prebake.rebuild.isolation``); the report's ``isolated`` line says what it had. Exit
0 when the rebuilt asset has the same sha256, 1 when it differs (the first file and archive
member that differ are named) or the rebuild failed, 2 when the check cannot be made (an
unreadable asset, manifest or lock; another workspace; an asset inside the rebuild's folder or
an ``--into`` inside the workspace).
"""

from __future__ import annotations

import argparse

NAME = "verify-rebuild"
HELP = ("rebuild a published asset from its manifest and the workspace's lock in a fresh "
        "folder; say whether the bytes are the same and where they first differ")
ORDER = 74
LISTED = 8  # differing members printed (all of them in --json)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("asset", metavar="ASSET", help="the published .tar.xz to check")
    p.add_argument("--manifest", metavar="FILE",
                   help="the asset's manifest (default: its .json sidecar, else the one inside)")
    p.add_argument("--into", metavar="DIR",
                   help="an empty or new folder outside the workspace to rebuild in (default: "
                        ".prebake/rebuild/ in the workspace, emptied first); kept afterwards")
    p.add_argument("--json", action="store_true", help="machine-readable report")


def run(args: argparse.Namespace) -> int:
    import os
    from pathlib import Path

    from prebake.commands._common import find_workspace, print_json, say
    from prebake.jsonio import SCHEMA_VERSION
    from prebake.rebuild.fresh import verify_rebuild

    builder = None
    if not args.json:
        from prebake.commands.build import with_progress

        builder = with_progress
    report = verify_rebuild(
        Path(args.asset), find_workspace(args.workspace),
        into=Path(args.into) if args.into else None,
        manifest=Path(args.manifest) if args.manifest else None,
        caller_env=dict(os.environ), builder=builder)
    if args.json:
        print_json({"schema_version": SCHEMA_VERSION, **report.to_json()})
        return 0 if report.same else 1
    say(f"asset    {report.asset}  sha256 {report.sha256}  {report.size:,} bytes")
    say(f"unit     {report.unit}  input hash {report.input_hash[:16]}…  (manifest: "
        f"{report.manifest})")
    say(f"rebuilt  in {report.folder} in {report.seconds:.1f} s (log: {report.log})")
    say(f"isolated {report.isolation.line()}")
    if report.rebuilt is None:
        say(f"not rebuilt: {report.message}", err=True)
        return 1
    say(f"         sha256 {report.rebuilt_sha256}  {report.rebuilt_size:,} bytes")
    if report.same:
        say("same bytes")
        return 0
    first = report.first
    if first is not None:
        say(f"differs: first at {first.where}: {first.detail}")
    if report.differing is not None:
        shown = ", ".join(report.differing[:LISTED])
        more = f", +{len(report.differing) - LISTED} more" if len(report.differing) > LISTED \
            else ""
        say(f"{len(report.differing)} differing file(s) and archive member(s): {shown}{more}")
    return 1
