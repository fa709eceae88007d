"""The trust steps of a build: the provenance's build definition and the SBOM go into the
asset, the ``.intoto.json`` statement beside it. What a consumer checks (``fetch``, ``inspect``)
is ``consumer``'s.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prebake import jsonio
from prebake.package.naming import PROVENANCE_SUFFIX, SIGNATURE_SUFFIX
from prebake.trust.provenance import build_definition, run_details
from prebake.trust.sbom import SBOM_PATH, make_sbom
from prebake.trust.statement import statement

if TYPE_CHECKING:
    from prebake.model.workspace import Workspace
    from prebake.plan.units import Unit


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
               settings: Mapping[str, Mapping[str, str]] | None = None,
               licenses: Mapping[str, str] | None = None) -> UnitTrust:
    """Provenance and SBOM for one unit; ``work_root/<recipe>/`` holds each recipe's sources,
    ``settings`` each recipe's recorded CMake cache entries and ``licenses`` each recipe's
    proven SPDX expression (what its SBOM may claim).

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
    sbom = make_sbom(unit.asset, unit.recipes, ws.pins, unit.input_hash, settings, licenses)
    return UnitTrust(definition, sbom, started)
