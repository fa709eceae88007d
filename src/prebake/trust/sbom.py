"""A CycloneDX SBOM inside every asset (``share/prebake/sbom.cdx.json``).

It lists the asset itself (``metadata.component``), every recipe built into it with its
version and where its source came from, and the third-party components each recipe declares as
``bundled`` (for onnxruntime: abseil, protobuf, onnx, re2, …) with the versions upstream's
build of that release compiles in, or, where the workspace provided a component's source with
another archive ([sources.provided]), with that archive and no version. A component compiled in
only under a build option (``Component.when``) is listed only where the unit's recorded CMake
cache shows that option on.
Written with ``cyclonedx-python-lib`` (the CycloneDX project's own Python model and serializer)
so the document stays valid as the spec moves; tests validate it with that library's validator.
Every URL in it goes through ``prebake.redact`` (a source URL with a token ships masked).

The file is inside the tar.xz, so it must be deterministic: no timestamp, and the serial number
is a UUIDv5 of the asset name and its input hash (same inputs, same serial, same bytes).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence

from cyclonedx.model import (
    ExternalReference,
    ExternalReferenceType,
    HashAlgorithm,
    HashType,
    XsUri,
)
from cyclonedx.model.bom import Bom
from cyclonedx.model.component import Component, ComponentType
from cyclonedx.model.license import LicenseExpression
from cyclonedx.output.json import JsonV1Dot6
from packageurl import PackageURL

from prebake.model.recipe import GitSource, Recipe, Repackage, UrlSource
from prebake.package.naming import AssetId
from prebake.redact import redact_json
from prebake.sources.fetch_source import render_source

SBOM_PATH = "share/prebake/sbom.cdx.json"
_SERIAL_NAMESPACE = uuid.UUID("6f1c3c0e-8a4e-5b7e-9d1a-70726562616b")  # fixed: "prebak" in hex


def _purl(name: str, version: str, platform: str | None = None) -> PackageURL:
    return PackageURL(type="generic", name=name, version=version or None,
                      qualifiers={"platform": platform} if platform else None)


def _references(recipe: Recipe, version: str, pins: Mapping[str, str],
                platform: str) -> list[ExternalReference]:
    refs: list[ExternalReference] = []
    strategy = recipe.strategy_for(platform)
    if isinstance(strategy, Repackage):
        refs.append(ExternalReference(
            type=ExternalReferenceType.DISTRIBUTION,
            url=XsUri(strategy.url.format(version=version)), hashes=_hashes(strategy.sha256)))
    for src in recipe.fetched_sources(platform, version):
        s = render_source(src, version, pins)
        if isinstance(s, GitSource):
            at = f" at commit {s.commit} (prebake.sources.lock)" if s.commit else ""
            refs.append(ExternalReference(type=ExternalReferenceType.VCS, url=XsUri(s.url),
                                          comment=f"ref {s.ref}{at}"))
        elif isinstance(s, UrlSource):
            refs.append(_source_archive(s))
    return refs


def _source_archive(src: UrlSource) -> ExternalReference:
    return ExternalReference(type=ExternalReferenceType.SOURCE_DISTRIBUTION,
                             url=XsUri(src.url), hashes=_hashes(src.sha256))


def _hashes(sha256: str) -> list[HashType]:
    """The digest the lock gave (none for a recipe read without its lock)."""
    return [HashType(alg=HashAlgorithm.SHA_256, content=sha256)] if sha256 else []


# CMake's true constants (``if(<constant>)``), as a recorded cache value may spell them
_CMAKE_TRUE = frozenset({"1", "ON", "YES", "TRUE", "Y"})


def _bundled(recipe: Recipe, version: str, platform: str,
             settings: Mapping[str, str]) -> list[Component]:
    """The components ``recipe`` bundles at ``version``: with upstream's version, or, where
    this unit compiled an archive that stands in for the component's source, with that
    archive (URL and digest) and no version: which release it holds is not proven here.
    An optional component needs its option ON in ``settings`` (the recorded CMake cache)."""
    standins = {s.provides: s for s in recipe.fetched_sources(platform, version)
                if isinstance(s, UrlSource) and s.provides}
    out = []
    for c in recipe.bundled_for(version):
        if c.when and settings.get(c.when, "").upper() not in _CMAKE_TRUE:
            continue
        archive = standins.get(c.source) if c.source else None
        if archive is None:
            out.append(Component(name=c.name, version=c.version or None,
                                 type=ComponentType.LIBRARY,
                                 bom_ref=f"bundled:{recipe.name}/{c.name}@{c.version}",
                                 purl=_purl(c.name, c.version),
                                 description=f"bundled into {recipe.name}"))
            continue
        out.append(Component(
            name=c.name, type=ComponentType.LIBRARY,
            bom_ref=f"bundled:{recipe.name}/{c.name}@{archive.sha256 or archive.url}",
            purl=_purl(c.name, ""),
            description=f"bundled into {recipe.name}, compiled from {archive.url}, which "
                        f"stands in for {c.source} (upstream: {c.version})",
            external_references=[_source_archive(archive)]))
    return out


def make_sbom(aid: AssetId, recipes: Sequence[Recipe], pins: Mapping[str, str],
              input_hash: str, settings: Mapping[str, Mapping[str, str]] | None = None,
              licenses: Mapping[str, str] | None = None) -> bytes:
    """The SBOM's JSON bytes (CycloneDX 1.6); ``settings`` holds each recipe's recorded
    CMake cache entries (``Build.record``), ``licenses`` the SPDX expression each recipe's
    libraries proved (``prebake.package.license_proof``), by recipe name. A recipe without a
    proven license gets none: the SBOM states no license it was not shown. The asset itself
    carries its recipes' expressions joined by ``AND`` when every recipe proved one."""
    licenses = licenses or {}
    serial = uuid.uuid5(_SERIAL_NAMESPACE, f"{aid.filename}\n{input_hash}")
    bom = Bom(serial_number=serial)
    bom.metadata.timestamp = None  # type: ignore[assignment]  # deterministic: no clock
    proven = sorted({licenses[r.name] for r in recipes if r.name in licenses})
    whole = recipes and all(r.name in licenses for r in recipes)
    root = Component(name=aid.name, version=aid.version, type=ComponentType.LIBRARY,
                     bom_ref=aid.filename, purl=_purl(aid.name, aid.version, aid.platform),
                     description=f"prebake asset {aid.filename}",
                     licenses=[LicenseExpression(" AND ".join(
                         f"({e})" if " " in e and len(proven) > 1 else e for e in proven))]
                     if whole else None)
    bom.metadata.component = root
    built: list[Component] = []
    for r in recipes:
        version = pins.get(r.pin, "")
        comp = Component(name=r.name, version=version or None, type=ComponentType.LIBRARY,
                         bom_ref=f"recipe:{r.name}@{version}", purl=_purl(r.name, version),
                         description=r.description or None,
                         licenses=[LicenseExpression(licenses[r.name])]
                         if r.name in licenses else None,
                         external_references=_references(r, version, pins, aid.platform))
        bundled = _bundled(r, version, aid.platform, (settings or {}).get(r.name, {}))
        bom.components.add(comp)
        for b in bundled:
            bom.components.add(b)
        bom.register_dependency(comp, bundled)
        built.append(comp)
    bom.register_dependency(root, built)
    text: str = JsonV1Dot6(bom).output_as_string(indent=2)
    # a source URL may carry a token: the SBOM ships in the asset, so it is redacted like the
    # manifest (the serializer is json.dumps(indent=2): the same call writes it back)
    doc = json.loads(text)
    shown = redact_json(doc)
    if shown != doc:
        text = json.dumps(shown, indent=2)
    return (text + "\n").encode()
