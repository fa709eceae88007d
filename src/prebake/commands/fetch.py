"""``prebake fetch NAME==VERSION --platform P``: download, verify, re-check, unpack, lock."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prebake.model.workspace import Workspace

NAME = "fetch"
HELP = "fetch a pinned asset: verify sha256, re-check the contract, unpack safely, write the lock"
ORDER = 71


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("spec", metavar="NAME==VERSION")
    p.add_argument("--platform", required=True, metavar="P")
    p.add_argument("--store", metavar="URL",
                   help="store URL, a [stores.NAME] of the workspace, or comma-separated "
                        "mirrors (default: $PREBAKE_STORE or the workspace's default store)")
    p.add_argument("--release", metavar="TAG", help="release tag (default: v<VERSION>, "
                   "<VERSION>, continuous, then any)")
    p.add_argument("--into", metavar="DIR", help="prefix to unpack into "
                   "(default: prebake_deps/<name>-<platform>)")
    p.add_argument("--contract", metavar="FILE",
                   help="consumer contract (default: the workspace platform's contract)")
    p.add_argument("--lock", metavar="FILE", help="lock file (default: ./prebake.lock in the "
                   "workspace or the current folder)")
    p.add_argument("--update", action="store_true",
                   help="allow re-locking a different version than the lock holds")
    p.add_argument("--allowed-signers", metavar="FILE",
                   help="refuse assets without a valid ssh signature (<asset>.sig) from a key in "
                        "this allowed-signers file (default: [trust] allowed_signers in the "
                        "workspace's prebake.toml)")
    p.add_argument("--link-test", action="store_true",
                   help="link every fetched library with the workspace platform's own compiler "
                        "and link_test flags; install nothing if one fails")
    p.add_argument("--json", action="store_true", help="machine-readable result")


def _contract(args: argparse.Namespace, ws: Workspace | None) -> tuple[Any, str | None]:
    from prebake.contract.terms import load_contract_file

    if args.contract:
        return load_contract_file(Path(args.contract)), None
    if ws is None:
        return None, None
    if not ws.platforms:  # a consumer that declares no platforms: nothing to re-check against
        return None, f"{ws.file}: no platform {args.platform!r}, facts not re-checked"
    # a platform the workspace lacks is a typo until proven otherwise: fail before any download
    # (an explicit --contract fetches for a platform the workspace does not declare)
    ws.platform_names(args.platform)
    return ws.platforms[args.platform].contract, None


def _consumer(args: argparse.Namespace, ws: Workspace | None) -> Any:
    """The consumer's platform toolchain, asked what it is (compared with the asset's)."""
    from prebake.consume.fetch import ConsumerToolchain
    from prebake.errors import PrebakeError

    plat = ws.platforms.get(args.platform) if ws is not None else None
    if plat is None:
        if args.link_test:
            raise PrebakeError(f"--link-test needs the consumer's platform {args.platform!r} "
                               "in its prebake.toml (its compiler and link_test flags)")
        return None
    from prebake.toolchain.verify import resolved_toolchain, verify_platform

    assert ws is not None
    verdict = verify_platform(plat, ws.pins)
    import dataclasses

    plat = dataclasses.replace(plat, toolchain=resolved_toolchain(plat.toolchain, verdict))
    return ConsumerToolchain(plat, verdict.record(), link_test=args.link_test)


def run(args: argparse.Namespace) -> int:
    from prebake.commands._common import console, err_console, print_json
    from prebake.commands._store import byte_progress, store_url, workspace_root
    from prebake.consume.fetch import FetchRequest, default_lock, fetch
    from prebake.errors import PrebakeError
    from prebake.jsonio import SCHEMA_VERSION

    name, sep, version = args.spec.partition("==")
    if not sep or not name or not version:
        raise PrebakeError(f"{args.spec!r}: expected NAME==VERSION (a pinned version)")
    from prebake.consume.fetch import check_request

    check_request(name, version, args.platform, args.release)  # before any output starts
    root = workspace_root(args)
    # the workspace is read once, with or without --contract: its [trust] table decides
    # whether unsigned assets are refused, so a prebake.toml that cannot be read stops here
    ws = None
    if root is not None:
        from prebake.intake import load_workspace

        ws = load_workspace(root)
    url = store_url(args.store, root, ws)
    contract, note = _contract(args, ws)
    base = root or Path.cwd()
    into = Path(args.into) if args.into else base / "prebake_deps" / f"{name}-{args.platform}"
    lock = Path(args.lock) if args.lock else default_lock(root)
    allowed = (Path(args.allowed_signers) if args.allowed_signers
               else ws.trust.allowed_signers if ws is not None else None)
    consumer = _consumer(args, ws)
    with byte_progress(not args.json, f"fetch {name} {version}") as progress:
        result = fetch(FetchRequest(
            name, version, args.platform, store=url, into=into, contract=contract,
            lock_path=lock, release=args.release, root=root, update_lock=args.update,
            allowed_signers=allowed, consumer=consumer), progress)
    if note:
        result.notes.insert(0, note)
    if args.json:
        print_json({"schema_version": SCHEMA_VERSION, **result.to_json()})
        return 0
    for n in result.notes:
        err_console().print(f"note: {n}", markup=False)
    how = "downloaded" if result.downloaded else "from cache"
    console().print(f"{result.asset.filename} ({how}, sha256 {result.sha256[:12]}…) "
                    f"→ {result.into}", markup=False)
    return 0
