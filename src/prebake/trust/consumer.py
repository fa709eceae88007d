"""What a consumer of an asset checks: ``fetch`` refuses an unsigned or badly signed asset
before anything is installed, ``inspect`` shows an asset's provenance and signature status.
The build's side (provenance and SBOM made) is ``hooks``'.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prebake.bounded import read_bounded
from prebake.digest import file_sha256
from prebake.errors import PrebakeError
from prebake.package.naming import PROVENANCE_SUFFIX, SIGNATURE_SUFFIX, AssetId
from prebake.trust.sign import (
    SignatureError,
    Verified,
    check_allowed_signers,
    signed_text,
    verify_bytes,
)
from prebake.trust.statement import check_statement, summary

if TYPE_CHECKING:
    from prebake.store.base import Store

ALLOWED_SIGNERS_NAME = "allowed_signers"  # looked for next to an asset by `prebake inspect`


def verify_in_store(store: Store, aid: AssetId, release: str, sha256: str,
                    allowed_signers: Path) -> Verified:
    """Check ``<asset>.sig`` (and the statement it covers) in the store against the allowed
    signers, for the asset bytes with ``sha256``; raises ``SignatureError`` (one line)."""
    what = f"{aid.filename} (release {release} of {store.url})"
    check_allowed_signers(allowed_signers)  # a consumer's mistake (exit 2), not the asset's
    sig = store.read_sidecar(aid, SIGNATURE_SUFFIX, release)
    if sig is None:
        raise SignatureError(f"{what}: not signed (no {aid.filename}{SIGNATURE_SUFFIX} in "
                             f"{store.url}); refusing to install an unsigned asset")
    prov = store.read_sidecar(aid, PROVENANCE_SUFFIX, release)
    files = [(aid.filename, sha256)]
    if prov is not None:
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
    try:
        return json.loads(read_bounded(path, 64 * 1024**2, "statement"))
    except (OSError, ValueError) as exc:
        raise PrebakeError(f"{path}: cannot read ({exc})") from None


def asset_status(asset: Path, allowed_signers: Path | None = None) -> dict[str, Any]:
    """Provenance summary and signature status of an asset file and the sidecars next to it.

    Signature states: ``unsigned``, ``unchecked`` (a ``.sig`` but no allowed-signers file given
    or next to the asset), ``valid`` (with the principal) and ``invalid`` (with the reason).
    """
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
        raw = read_bounded(sig, 64 * 1024, "signature")
        principal = verify_bytes(signed_text(files), raw, allowed, asset.name)
    except SignatureError as exc:
        return {"status": "invalid", "reason": str(exc), "allowed_signers": str(allowed)}
    return {"status": "valid", "principal": principal, "allowed_signers": str(allowed),
            "covers": [n for n, _ in files]}
