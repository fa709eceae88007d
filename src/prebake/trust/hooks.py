"""The trust steps other commands call: build (provenance + SBOM), fetch (refuse unsigned or
badly signed assets before anything is installed) and inspect (provenance and signature status).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prebake import jsonio
from prebake.errors import PrebakeError
from prebake.package.naming import PROVENANCE_SUFFIX, SIGNATURE_SUFFIX, AssetId
from prebake.trust.provenance import build_definition, check_statement, run_details, statement
from prebake.trust.sbom import SBOM_PATH, make_sbom
from prebake.trust.sign import SignatureError, Verified, signed_text, verify_bytes

if TYPE_CHECKING:
    from prebake.plan.model import Unit
    from prebake.store.base import Store
    from prebake.workspace.model import Workspace

ALLOWED_SIGNERS_NAME = "allowed_signers"  # looked for next to an asset by `prebake inspect`


@dataclass
class UnitTrust:
    """What a unit's build adds: the manifest's ``provenance`` and the in-archive SBOM now, the
    ``.intoto.json`` sidecar once the asset's sha256 is known."""

    definition: dict[str, Any]
    sbom: bytes
    started: float

    @property
    def generated(self) -> dict[str, bytes]:
        return {SBOM_PATH: self.sbom}

    def finish(self, asset: Path, sha256: str, *, env: Mapping[str, str] | None = None) -> Path:
        """Write ``<asset>.intoto.json`` and drop any ``.sig`` left from an older asset (it
        would no longer match, and the store must not carry it along)."""
        asset.with_name(asset.name + SIGNATURE_SUFFIX).unlink(missing_ok=True)
        st = statement(asset.name, sha256, self.definition,
                       run_details(started=self.started, finished=time.time(), env=env))
        out = asset.with_name(asset.name + PROVENANCE_SUFFIX)
        jsonio.atomic_write_bytes(out, jsonio.dumps(st).encode())
        return out


def unit_trust(ws: Workspace, unit: Unit, toolchain: Mapping[str, Any], work_root: Path,
               started: float, dist: Path,
               settings: Mapping[str, Mapping[str, str]] | None = None) -> UnitTrust:
    """Provenance and SBOM for one unit; ``work_root/<recipe>/`` holds each recipe's sources,
    ``settings`` each recipe's recorded CMake cache entries (what its SBOM may claim).

    Called right before the asset is (re)written into ``dist``: the trust sidecars of the
    previous asset there go first, so an interrupted build never leaves a statement or a
    signature next to bytes they do not describe.
    """
    for suffix in (SIGNATURE_SUFFIX, PROVENANCE_SUFFIX):
        (dist / (unit.asset.filename + suffix)).unlink(missing_ok=True)
    work = {r.name: work_root / r.name for r in unit.recipes}
    definition = build_definition(
        unit=unit.id, stage=unit.stage.name, recipes=unit.recipes, platform=unit.platform,
        pins=ws.pins, input_hash=unit.input_hash, toolchain=toolchain, root=ws.root, work=work)
    sbom = make_sbom(unit.asset, unit.recipes, ws.pins, unit.input_hash, settings)
    return UnitTrust(definition, sbom, started)


def verify_in_store(store: Store, aid: AssetId, release: str, sha256: str,
                    allowed_signers: Path) -> Verified:
    """Check ``<asset>.sig`` (and the statement it covers) in the store against the allowed
    signers, for the asset bytes with ``sha256``; raises ``SignatureError`` (one line)."""
    from prebake.trust.sign import check_allowed_signers

    what = f"{aid.filename} (release {release} of {store.url})"
    check_allowed_signers(allowed_signers)  # a consumer's mistake (exit 2), not the asset's
    sig = store.read_sidecar(aid, SIGNATURE_SUFFIX, release)
    if sig is None:
        raise SignatureError(f"{what}: not signed (no {aid.filename}{SIGNATURE_SUFFIX} in "
                             f"{store.url}); refusing to install an unsigned asset")
    prov = store.read_sidecar(aid, PROVENANCE_SUFFIX, release)
    files = [(aid.filename, sha256)]
    if prov is not None:
        import hashlib

        files.append((aid.filename + PROVENANCE_SUFFIX, hashlib.sha256(prov).hexdigest()))
    principal = verify_bytes(signed_text(files), sig, allowed_signers, what)
    if prov is not None:
        try:
            check_statement(json.loads(prov), aid.filename, sha256,
                            f"{aid.filename}{PROVENANCE_SUFFIX}")
        except (ValueError, PrebakeError) as exc:
            raise SignatureError(f"{what}: signed provenance is unusable: {exc}") from None
    return Verified(principal, tuple(n for n, _ in files))


def _read_json(path: Path) -> Any:
    from prebake.bounded import read_bounded

    try:
        return json.loads(read_bounded(path, 64 * 1024**2, "statement"))
    except (OSError, ValueError) as exc:
        raise PrebakeError(f"{path}: cannot read ({exc})") from None


def asset_status(asset: Path, allowed_signers: Path | None = None) -> dict[str, Any]:
    """Provenance summary and signature status of an asset file and the sidecars next to it.

    Signature states: ``unsigned``, ``unchecked`` (a ``.sig`` but no allowed-signers file given
    or next to the asset), ``valid`` (with the principal) and ``invalid`` (with the reason).
    """
    from prebake.digest import file_sha256
    from prebake.trust.provenance import summary

    asset = Path(asset)
    digest = file_sha256(asset)
    out: dict[str, Any] = {"asset": str(asset), "sha256": digest, "provenance": None,
                           "provenance_error": None}
    prov = asset.with_name(asset.name + PROVENANCE_SUFFIX)
    if prov.is_file():
        try:
            data = check_statement(_read_json(prov), asset.name, digest, str(prov))
            out["provenance"] = {"source": prov.name, **summary(data)}
        except PrebakeError as exc:
            out["provenance_error"] = str(exc)
    else:
        man = asset.with_name(asset.name + ".json")
        bd = _read_json(man).get("provenance") if man.is_file() else None
        if isinstance(bd, dict):
            out["provenance"] = {"source": man.name, **summary(
                {"predicate": {"buildDefinition": bd}})}
    out["signature"] = _signature_status(asset, digest, prov, allowed_signers)
    return out


def _signature_status(asset: Path, digest: str, prov: Path, allowed: Path | None
                      ) -> dict[str, Any]:
    from prebake.digest import file_sha256

    sig = asset.with_name(asset.name + SIGNATURE_SUFFIX)
    if not sig.is_file():
        return {"status": "unsigned"}
    if allowed is None and (asset.parent / ALLOWED_SIGNERS_NAME).is_file():
        allowed = asset.parent / ALLOWED_SIGNERS_NAME
    if allowed is None:
        return {"status": "unchecked", "reason": "no allowed-signers file given or next to it"}
    files = [(asset.name, digest)]
    if prov.is_file():
        files.append((prov.name, file_sha256(prov)))
    try:
        from prebake.bounded import read_bounded

        raw = read_bounded(sig, 64 * 1024, "signature")
        principal = verify_bytes(signed_text(files), raw, allowed, asset.name)
    except SignatureError as exc:
        return {"status": "invalid", "reason": str(exc), "allowed_signers": str(allowed)}
    return {"status": "valid", "principal": principal, "allowed_signers": str(allowed),
            "covers": [n for n, _ in files]}
