"""The asset manifest: what an asset is, how it was made, and every file it holds.

Stored as ``share/prebake/manifest.json`` inside the asset and as the ``.json`` sidecar next to
it (same bytes), so a store can answer "is this unit already built?" from the sidecar alone (its
``input_hash``) and a consumer can re-check facts before unpacking. The format is the dataclasses
of ``prebake.manifest``; ``schemas/manifest.schema.json`` is generated from them, and
``schema_version`` changes when a field changes meaning.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from prebake import __version__
from prebake.manifest import MANIFEST_SCHEMA_VERSION, Manifest
from prebake.package.naming import AssetId
from prebake.redact import redact_json

__all__ = ["MANIFEST_SCHEMA_VERSION", "make_manifest", "schema_path"]


def make_manifest(aid: AssetId, *, input_hash: str, toolchain: Mapping[str, Any],
                  facts: Sequence[Mapping[str, Any]] = (),
                  link_order: Sequence[Sequence[str]] = (),
                  recipes: Sequence[Mapping[str, Any]] = (),
                  guards: Mapping[str, Any] | None = None,
                  inputs: Mapping[str, str] | None = None) -> Manifest:
    """A manifest with no ``files`` yet (``write_asset`` fills them from what it archives),
    validated like every manifest a reader will see.

    ``link_order`` is a list of groups of library paths relative to the prefix; a group of more
    than one is a dependency cycle that must be linked as a group. Nothing here depends on the
    clock or the machine, so rebuilding the same inputs gives the same manifest bytes.
    """
    out = {
        "schema_version": MANIFEST_SCHEMA_VERSION,
        "name": aid.name,
        "version": aid.version,
        "platform": aid.platform,
        "input_hash": input_hash,
        "toolchain": dict(toolchain),
        "facts": [dict(f) for f in facts],
        "link_order": [list(g) for g in link_order],
        "recipes": [dict(r) for r in recipes],
        "created_by": f"prebake {__version__}",
    }
    if guards is not None:
        out["guards"] = dict(guards)
    if inputs:
        out["inputs"] = dict(inputs)  # what makes up input_hash: `plan --explain` diffs it
    redacted = redact_json(out)  # a URL's credentials or a token never ship in an asset
    assert isinstance(redacted, dict)
    return Manifest.from_json({**redacted, "files": []}, f"the manifest of {aid.filename}")


def schema_path() -> Path:
    """The committed schema (a checkout file generated from ``prebake.manifest``; tests validate
    every manifest a build writes against it)."""
    return Path(__file__).resolve().parents[3] / "schemas" / "manifest.schema.json"
