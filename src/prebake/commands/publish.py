"""``prebake publish ASSET… --store URL [--release TAG]``: upload assets with their sidecars."""

from __future__ import annotations

import argparse
from pathlib import Path

NAME = "publish"
HELP = "upload assets with their .sha256 and .json sidecars (atomic, retried, idempotent)"
ORDER = 70


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("assets", nargs="+", metavar="ASSET", help="<name>-<version>-<platform>.tar.xz")
    p.add_argument("--store", metavar="URL",
                   help="file://DIR, github://OWNER/REPO, s3://BUCKET/PREFIX "
                        "(default: $PREBAKE_STORE or the workspace's default store)")
    p.add_argument("--release", metavar="TAG", default=None,
                   help="release tag (default: the rolling 'continuous' prerelease)")
    p.add_argument("--sign", metavar="KEY",
                   help="sign each asset (and its .intoto.json provenance) with this ssh key "
                        "(ssh-keygen -Y sign, namespace 'prebake'; a .pub whose key is in "
                        "ssh-agent works too) and upload <asset>.sig with it")
    p.add_argument("--json", action="store_true", help="machine-readable result")


def run(args: argparse.Namespace) -> int:
    from prebake.commands._common import console, print_json
    from prebake.commands._store import byte_progress, store_url, workspace_root
    from prebake.errors import PrebakeError
    from prebake.jsonio import SCHEMA_VERSION
    from prebake.names import check_name
    from prebake.store import open_store
    from prebake.store.base import DEFAULT_RELEASE, prepare_publish

    if args.release is not None:
        check_name(args.release, "--release")
    root = workspace_root(args)
    url = store_url(args.store, root)
    # validate every asset (size, sidecars, checksums) before the first byte is uploaded
    sets = [prepare_publish(Path(a)) for a in args.assets]
    if args.sign:
        from prebake.trust.sign import sign_asset

        for ps in sets:  # next to the asset, so the store uploads it with the other sidecars
            sign_asset(ps.asset, Path(args.sign))
    store = open_store(url, root=root)
    if not store.writable:
        raise PrebakeError(f"{url}: this store is read-only (mirrors cannot be published to)")
    release = args.release or DEFAULT_RELEASE
    done = []
    for ps in sets:
        with byte_progress(not args.json, f"publish {ps.aid.filename}") as progress:
            store.publish(ps.asset, release, progress=progress)
        done.append({"asset": ps.aid.filename, "sha256": ps.sha256, "size": ps.size,
                     "url": store.asset_url(ps.aid, release)})
        if not args.json:
            console().print(f"published {ps.aid.filename} → {store.asset_url(ps.aid, release)}",
                            markup=False)
    if args.json:
        print_json({"schema_version": SCHEMA_VERSION, "store": url, "release": release,
                    "published": done})
    return 0
