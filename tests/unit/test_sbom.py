"""The CycloneDX SBOM inside assets: valid against the CycloneDX 1.6 schema (the library's own
validator), lists the recipes and their bundled components, and is deterministic."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from cyclonedx.schema import SchemaVersion
from cyclonedx.validation.json import JsonStrictValidator

from prebake.package.naming import asset_id
from prebake.recipes.loader import find_recipe, load_recipe_file
from prebake.recipes.model import Build, Component, Recipe, UrlSource
from prebake.trust.sbom import make_sbom

AID = asset_id("kiln-sdk-extra", "0.12.0", "linux-x86_64")


def _validate(data: bytes) -> None:
    errors = JsonStrictValidator(SchemaVersion.V1_6).validate_str(data.decode())
    assert errors is None, errors


def _recipe() -> Recipe:
    return Recipe(
        name="zstd", pin="zstd",
        sources=(UrlSource("https://example.invalid/zstd-{version}.tar.gz", sha256="ab" * 32),),
        platforms={"*": Build(commands=("true",))},
        bundled=(Component("xxhash", "0.8.2"), Component("divsufsort", "2.0.1")),
    )


def test_lists_the_asset_recipes_and_bundled_components() -> None:
    data = make_sbom(AID, [_recipe()], {"zstd": "1.5.6"}, "e" * 64)
    _validate(data)
    bom = json.loads(data)
    assert bom["metadata"]["component"]["purl"] == \
        "pkg:generic/kiln-sdk-extra@0.12.0?platform=linux-x86_64"
    comps = {c["name"]: c for c in bom["components"]}
    assert comps["zstd"]["version"] == "1.5.6"
    ref = comps["zstd"]["externalReferences"][0]
    assert ref["url"] == "https://example.invalid/zstd-1.5.6.tar.gz"
    assert ref["hashes"] == [{"alg": "SHA-256", "content": "ab" * 32}]
    assert comps["xxhash"]["version"] == "0.8.2" and comps["divsufsort"]["version"] == "2.0.1"
    deps = {d["ref"]: d.get("dependsOn", []) for d in bom["dependencies"]}
    assert deps[AID.filename] == [comps["zstd"]["bom-ref"]]
    assert sorted(deps[comps["zstd"]["bom-ref"]]) == sorted(
        [comps["xxhash"]["bom-ref"], comps["divsufsort"]["bom-ref"]])


def test_deterministic_serial_from_the_input_hash() -> None:
    a = make_sbom(AID, [_recipe()], {"zstd": "1.5.6"}, "e" * 64)
    assert a == make_sbom(AID, [_recipe()], {"zstd": "1.5.6"}, "e" * 64)
    b = make_sbom(AID, [_recipe()], {"zstd": "1.5.6"}, "d" * 64)
    sa, sb = json.loads(a)["serialNumber"], json.loads(b)["serialNumber"]
    assert sa != sb and sa.startswith("urn:uuid:")
    assert "timestamp" not in json.loads(a)["metadata"]


def test_onnxruntime_recipe_bundles_appear_with_versions() -> None:
    path = find_recipe("onnxruntime")
    assert path is not None
    ort = load_recipe_file(path)
    assert ort.bundled, "onnxruntime declares its bundled third-party libraries"
    data = make_sbom(asset_id("onnxruntime", "1.27.0", "wasm"), [ort],
                     {"onnxruntime": "1.27.0", "emsdk": "5.0.5"}, "a" * 64)
    _validate(data)
    names = {c["name"]: c.get("version") for c in json.loads(data)["components"]}
    for comp in ort.bundled:
        assert names[comp.name] == comp.version


def test_invalid_document_is_caught_by_the_validator() -> None:
    """The validator really validates (a test that could fail): a broken hash is refused."""
    data = json.loads(make_sbom(AID, [_recipe()], {"zstd": "1.5.6"}, "e" * 64))
    zstd = next(c for c in data["components"] if c["name"] == "zstd")
    zstd["externalReferences"][0]["hashes"][0]["content"] = "nothex"
    errors = JsonStrictValidator(SchemaVersion.V1_6).validate_str(json.dumps(data))
    assert errors is not None


def test_builds_from_a_path_recipe(tmp_path: Path) -> None:
    r = replace(_recipe(), path=tmp_path / "zstd.py", bundled=())
    _validate(make_sbom(AID, [r], {}, "e" * 64))  # no pin value known: no version, still valid
