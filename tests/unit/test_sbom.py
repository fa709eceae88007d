"""The CycloneDX SBOM inside assets: valid against the CycloneDX 1.6 schema (the library's own
validator), lists the recipes and their bundled components, and is deterministic."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from cyclonedx.schema import SchemaVersion
from cyclonedx.validation.json import JsonStrictValidator

from prebake.model.recipe import Build, Component, Recipe, UrlSource
from prebake.package.naming import asset_id
from prebake.recipes.loader import find_recipe, load_recipe_file
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


def _flagship(platform: str, pins: dict[str, str] | None = None,
              settings: dict[str, str] | None = None) -> bytes:
    """The SBOM of the flagship workspace's onnxruntime unit on ``platform``, its recipe
    locked as a build locks it (the workspace's lock and [sources.provided]), with the
    CMake cache entries its build recorded (``settings``)."""
    from prebake.intake.loader import load_workspace
    from prebake.sources.lock import locked_recipe, read_source_lock

    ws = load_workspace(Path(__file__).parents[2] / "examples" / "flagship")
    pins = {**ws.pins, **(pins or {})}
    p = ws.platforms[platform]
    recipe, _ = locked_recipe(ws.recipes["onnxruntime"], platform, p.os, p.arch, pins,
                              read_source_lock(ws.root), ws.provided)
    data = make_sbom(asset_id("onnxruntime", pins["onnxruntime"], platform), [recipe], pins,
                     "a" * 64, {"onnxruntime": settings or {}})
    _validate(data)
    return data


def _bundled(data: bytes) -> dict[str, dict[str, object]]:
    return {c["name"]: c for c in json.loads(data)["components"]
            if c["bom-ref"].startswith("bundled:")}


def test_onnxruntime_repackaged_bundles_upstreams_versions() -> None:
    """Microsoft's own build compiles deps.txt's versions in: the SBOM says those."""
    ort = load_recipe_file(find_recipe("onnxruntime"))  # type: ignore[arg-type]
    comps = _bundled(_flagship("linux-x86_64"))
    assert {n: c.get("version") for n, c in comps.items()} == {
        c.name: c.version for c in ort.bundled_for("1.21.0") if not c.when}
    assert comps["eigen"]["version"] == "1d8b82b0740839c0de7f1242a3585e3390ff5f33"
    # Microsoft's build records no CMake cache: nothing optional (XNNPACK) is claimed for it
    assert "xnnpack" not in comps and "cpuinfo" not in comps


XNNPACK_FAMILY = {"xnnpack", "pthreadpool", "fxdiv"}


def test_onnxruntime_lists_xnnpack_where_the_recorded_build_switched_it_on() -> None:
    """The aarch64 build compiles the XNNPACK provider (its recorded CMake cache says
    onnxruntime_USE_XNNPACK=ON): XNNPACK, pthreadpool, FXdiv and cpuinfo are in its SBOM,
    each naming the Debian snapshot it was compiled from; a build that records the option
    OFF, or records nothing, lists none of them."""
    on = _bundled(_flagship("linux-aarch64", settings={"onnxruntime_USE_XNNPACK": "ON",
                                                       "onnxruntime_ENABLE_CPUINFO": "ON"}))
    assert XNNPACK_FAMILY | {"cpuinfo"} <= set(on)
    ref = on["xnnpack"]["externalReferences"][0]  # type: ignore[index]
    assert ref["url"].endswith("/xnnpack_0.0~git20241108.4ea82e5.orig.tar.xz")
    assert "version" not in on["xnnpack"]
    off = _bundled(_flagship("linux-aarch64", settings={"onnxruntime_USE_XNNPACK": "OFF",
                                                        "onnxruntime_ENABLE_CPUINFO": "ON"}))
    assert not XNNPACK_FAMILY & set(off) and "cpuinfo" in off
    assert not (XNNPACK_FAMILY | {"cpuinfo"}) & set(_bundled(_flagship("linux-aarch64")))


def test_onnxruntime_from_source_names_the_archives_that_stand_in() -> None:
    """The wasm build compiles Debian's archives where deps.txt pins other releases (Eigen
    3.4.0 for a later commit, date 3.0.3 for 3.0.1): no component claims deps.txt's version,
    each names the archive it was compiled from with the lock's digest."""
    comps = _bundled(_flagship("wasm"))
    assert len(comps) == 11
    for name, comp in comps.items():
        assert "version" not in comp, name
    eigen = comps["eigen"]
    ref = eigen["externalReferences"][0]
    assert ref["url"].endswith("/eigen3_3.4.0.orig.tar.bz2")
    assert ref["hashes"][0]["content"].startswith("b4c198460eba")
    assert "1d8b82b0740839c0de7f1242a3585e3390ff5f33" in eigen["description"]


def test_the_dependency_table_refuses_a_malformed_component(tmp_path: Path) -> None:
    from prebake.errors import PrebakeError
    from prebake.recipes.builtin.onnxruntime.fetchcontent import load_table

    row = '["1.0".x]\nurl = "https://example.invalid/x.zip"\ntake = "archive"\n'
    table = tmp_path / "deps.toml"
    for extra, wrong in (('component = ["x"]\n', "component must be"),
                         ('when = "USE_X"\n', "when names")):
        table.write_text(row + extra)
        with pytest.raises(PrebakeError, match=wrong):
            load_table(table)
    table.write_text(row + 'component = ["x", "1.2"]\nwhen = "USE_X"\n')
    assert load_table(table)["1.0"][0].component == ("x", "1.2")


def test_an_optional_component_no_build_records_is_refused() -> None:
    from prebake.recipes.validate import validate_recipe

    r = replace(_recipe(), bundled=(Component("xxhash", "0.8.2", when="ZSTD_USE_XXHASH"),))
    def about_when(recipe: Recipe) -> list[str]:
        return [p.message for p in validate_recipe(recipe) if "ZSTD_USE_XXHASH" in p.message]

    assert about_when(r) == ["xxhash: when = 'ZSTD_USE_XXHASH' is a CMake variable no "
                             "platform's Build records"]
    recorded = replace(r, platforms={"*": Build(commands=("true",), cmake_cache="c.txt",
                                                record=("ZSTD_USE_XXHASH",))})
    assert about_when(recorded) == []


def test_onnxruntime_release_without_a_table_claims_no_bundled_versions() -> None:
    """1.21.0's deps.txt says nothing of another release's: none is claimed for it."""
    assert _bundled(_flagship("linux-x86_64", {"onnxruntime": "1.27.0"})) == {}


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


def test_a_proven_license_is_the_recipe_and_asset_expression_and_none_is_claimed_unproven(
        ) -> None:
    zstd, other = _recipe(), replace(_recipe(), name="other", pin="other")
    pins = {"zstd": "1.5.6", "other": "1.0"}
    data = make_sbom(AID, [zstd, other], pins, "e" * 64,
                     licenses={"zstd": "GPL-2.0-or-later", "other": "LicenseRef-FFmpeg-nonfree"})
    _validate(data)
    bom = json.loads(data)
    comps = {c["name"]: c for c in bom["components"]}
    assert comps["zstd"]["licenses"] == [{"expression": "GPL-2.0-or-later"}]
    assert comps["other"]["licenses"] == [{"expression": "LicenseRef-FFmpeg-nonfree"}]
    assert bom["metadata"]["component"]["licenses"] == [
        {"expression": "GPL-2.0-or-later AND LicenseRef-FFmpeg-nonfree"}]
    # one recipe without a proof: it states none, and so does the asset
    half = json.loads(make_sbom(AID, [zstd, other], pins, "e" * 64,
                                licenses={"zstd": "GPL-2.0-or-later"}))
    assert "licenses" not in {c["name"]: c for c in half["components"]}["other"]
    assert "licenses" not in half["metadata"]["component"]
    assert "licenses" not in json.loads(make_sbom(AID, [zstd], pins, "e" * 64))["components"][0]
