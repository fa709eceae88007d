"""``prebake check PATH… --platform P | --contract FILE``: facts vs contract, all violations."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prebake.model.workspace import Platform

NAME = "check"
HELP = "check binaries, folders or assets against a platform's ABI contract"
ORDER = 40


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="binaries, folders (their lib/ is searched) or .tar.xz assets")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--platform", metavar="P",
                     help="use this platform's contract from prebake.toml")
    src.add_argument("--contract", metavar="FILE", help="a standalone contract TOML file")
    p.add_argument("--json", action="store_true", help="machine-readable report")
    p.add_argument("--deep", action="store_true",
                   help="read as inspect --deep does (wasm feature lists are whole without it: "
                        "every instruction is decoded on the default path)")


def load_platform(workspace: str | None, name: str) -> Platform:
    """The named platform of the workspace, or a one-line error listing the known ones.

    Reads only the workspace's platforms: checking a binary needs the contract, not the
    recipes' sources (which a consumer's checkout may not have).
    """
    from prebake.commands._common import find_workspace
    from prebake.errors import PrebakeError
    from prebake.intake.loader import WORKSPACE_FILE, load_platforms

    root = find_workspace(workspace)
    platforms = load_platforms(root)
    if name not in platforms:
        import difflib

        close = difflib.get_close_matches(name, platforms, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        known = ", ".join(sorted(platforms)) or "none"
        raise PrebakeError(f"{root / WORKSPACE_FILE}: no platform {name!r}{hint} (known: {known})")
    return platforms[name]


def run(args: argparse.Namespace) -> int:
    from rich.markup import escape

    from prebake.commands._common import console, print_json
    from prebake.contract.check import check_paths
    from prebake.contract.terms import load_contract_file

    platform = None
    pin, no_pin = None, ("--contract names no platform whose compiler could be verified "
                         "(--platform P does)")
    if args.contract:
        contract = load_contract_file(Path(args.contract))
    else:
        platform = load_platform(args.workspace, args.platform)
        contract = platform.contract
        if contract.producer:
            pin, no_pin = _producer_pin(args.workspace, platform, [Path(p) for p in args.paths])
    report = check_paths([Path(p) for p in args.paths], contract, deep=args.deep, pin=pin,
                         no_pin=no_pin)
    findings = _toolchain_findings([Path(p) for p in args.paths], platform)
    refused = [f for f in findings if f.level == "refuse"]
    if args.json:
        print_json({**report.to_json(), "ok": report.ok and not refused,
                    "toolchain": [f.to_json() for f in findings]})
    else:
        out = console()
        for v in report.violations:
            out.print(f"[red]✗[/red] {escape(v.message())}", markup=True)
        for u in report.unknown:
            mark = "[yellow]?[/yellow]" if u.allowed else "[red]✗[/red]"
            out.print(f"{mark} {escape(u.message())}", markup=True)
        if len(report.files) > 1:  # a folder or package: every binary with its verdict
            for f in report.passed:
                out.print(f"[green]✓[/green] {escape(f)}", markup=True)
        for finding in findings:
            mark = "[red]✗[/red]" if finding.level == "refuse" else "[yellow]note:[/yellow]"
            out.print(f"{mark} {escape(finding.message)}", markup=True)
        summary = report.render().splitlines()[-1]
        out.print(("[green]✓[/green] " if report.ok else "") + escape(summary), markup=True)
    return 0 if report.ok and not refused else 1


def _producer_pin(workspace: str | None, platform: Platform, paths: list[Path]
                  ) -> tuple[Any, str]:
    """The platform's compiler, verified against its pin now, as the producer rule holds
    binaries to it; an asset's files its recipes exempted (its manifest's
    ``guards.producer``) stay exempt, held to their recipe's globs."""
    from prebake.commands._common import find_workspace
    from prebake.contract.producer_rule import Allowed
    from prebake.intake.loader import load_pins
    from prebake.toolchain.producer_pin import pin_for
    from prebake.toolchain.verify import Status, verify_platform
    from prebake.variables import sanitized

    verdict = verify_platform(platform, load_pins(find_workspace(workspace)))
    if verdict.status in (Status.MISMATCH, Status.MISSING):
        return None, f"its compiler could not be verified here ({verdict.reason})"
    allowed = {}
    for path in paths:
        record = ((_asset_manifest(path) or {}).get("guards") or {}).get("producer") or {}
        for o in record.get("other_compilers") or ():
            if isinstance(o, dict) and isinstance(o.get("file"), str):
                allowed[f"{path}!{o['file']}"] = Allowed(
                    str(o.get("recipe")), tuple(o.get("allowed") or ()),
                    f"{o.get('why')}, as the asset's manifest records")
    env = sanitized(None, platform_env=platform.env, unset=platform.env_unset)
    pin = pin_for(verdict, env, allowed)
    return pin, "" if pin is not None else f"its compiler reported no release ({verdict.reason})"


def _asset_manifest(path: Path) -> dict[str, Any] | None:
    """An asset's manifest: its ``.json`` sidecar, else the copy inside (bounded read)."""
    import json
    import tarfile

    if not path.name.endswith((".tar.xz", ".tar.gz", ".tgz")):
        return None
    sidecar = path.with_name(path.name + ".json")
    try:
        if sidecar.is_file() and sidecar.stat().st_size < 16 << 20:
            data = json.loads(sidecar.read_text("utf-8"))
        else:
            with tarfile.open(path) as tf:
                fh = tf.extractfile("share/prebake/manifest.json")
                data = json.loads(fh.read(16 << 20)) if fh is not None else None
    except (OSError, ValueError, KeyError, tarfile.TarError):
        return None
    return data if isinstance(data, dict) else None


def _toolchain_findings(paths: list[Path], platform: Platform | None) -> list[Any]:
    """The asset's recorded toolchain against the platform's compiler (compat rules)."""
    if platform is None:
        return []
    manifests = [m for p in paths for m in [_asset_manifest(p)] if m is not None]
    if not manifests:
        return []
    from prebake.toolchain.compat import compare
    from prebake.toolchain.verify import verify_platform

    record = verify_platform(platform, {}).record()
    return [f for m in manifests for f in compare(m, record)]
