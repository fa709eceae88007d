"""``prebake.manifest``: the committed schema is what its dataclasses generate, the loader refuses
what that schema refuses, and an invalid manifest is one short error naming the file, where in
it and the rule it breaks."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prebake.manifest import (
    SCHEMA_FILE,
    Manifest,
    ManifestError,
    parse_manifest,
    read_manifest_file,
    schema_text,
)
from prebake.package.manifest_builder import schema_path
from tests import support

SCHEMA = json.loads(schema_path().read_text())

FULL = support.valid_manifest(
    "kiln-sdk-core", "0.12.0",
    input_hash="ab" * 32,
    facts=[{"path": "lib/libv.a", "format": "archive", "kind": "static-library", "os": "linux",
            "arch": "x86_64", "abi": {"eh": "native"}, "needed": None, "soname": None,
            "members": 1}],
    files=[{"path": "lib/libv.a", "sha256": "cd" * 32, "size": 10},
           {"path": "lib/libv.so", "link": "libv.so.1"}],
    link_order=[["lib/libv.a"]],
    recipes=[{"name": "v", "version": "1.0", "public_symbols": ["v_*"]}],
    inputs={"recipe:v": "ef" * 32},
    guards={"check": {"ok": True, "platform": "linux-x86_64", "contract": {"os": "linux"},
                      "undecided": []},
            "link_test": {"ok": True, "flags": ["-pthread"], "linked": ["snippet"],
                          "allow_undefined": {"host_*": ["host_log"]}}},
    provenance={"buildType": "https://prebake.invalid/build-types/unit/v1",
                "externalParameters": {}, "resolvedDependencies": []},
)


def test_the_committed_schema_is_what_the_dataclasses_generate() -> None:
    assert schema_path() == support.ROOT / SCHEMA_FILE
    assert schema_path().read_text() == schema_text(), "stale: run python -m prebake.reference"


def _schema_ok(d: Any) -> bool:
    # jsonschema, another implementation than the loader's fastjsonschema, by the $schema draft
    return bool(jsonschema.validators.validator_for(SCHEMA)(SCHEMA).is_valid(d))


def _model_ok(d: Any) -> bool:
    try:
        Manifest.from_json(d, "m.json")
    except ManifestError:
        return False
    return True


def test_a_complete_manifest_round_trips_and_is_typed() -> None:
    assert _schema_ok(FULL)
    m = Manifest.from_json(FULL, "m.json")
    assert m.to_json() == FULL
    assert m.named == ("kiln-sdk-core", "0.12.0", "linux-x86_64")
    assert m.toolchain.cxx == ("g++",) and m.toolchain.pin is None
    assert m.guards is not None and m.guards.link_test.allow_undefined == {
        "host_*": ("host_log",)}
    assert m.link_order == (("lib/libv.a",),)


def _broken() -> list[tuple[str, dict[str, Any]]]:
    cases: list[tuple[str, dict[str, Any]]] = []

    def case(label: str, edit: Any) -> None:
        d = copy.deepcopy(FULL)
        edit(d)
        cases.append((label, d))

    for key in ("name", "input_hash", "toolchain", "files", "link_order", "created_by"):
        case(f"no {key}", lambda d, k=key: d.pop(k))
    case("unknown key", lambda d: d.update(surprise=1))
    case("schema_version 2", lambda d: d.update(schema_version=2))
    case("empty name", lambda d: d.update(name=""))
    case("short hash", lambda d: d.update(input_hash="ab"))
    case("absolute file", lambda d: d["files"][0].update(path="/etc/passwd"))
    case("file leaves prefix", lambda d: d["files"][0].update(path="lib/../../x"))
    case("file without size", lambda d: d["files"][0].pop("size"))
    case("file and link", lambda d: d["files"][1].update(sha256="cd" * 32))
    case("negative size", lambda d: d["files"][0].update(size=-1))
    case("empty link group", lambda d: d.update(link_order=[[]]))
    case("guards without link_test", lambda d: d["guards"].pop("link_test"))
    case("check ok not bool", lambda d: d["guards"]["check"].update(ok="yes"))
    case("input not a string", lambda d: d["inputs"].update(x=1))
    case("fact without abi", lambda d: d["facts"][0].pop("abi"))
    case("cc not argv", lambda d: d["toolchain"].update(cc="gcc"))
    case("verified status unknown", lambda d: d["toolchain"].update(verified={
        "family": "gcc", "version": "12", "version_line": "gcc 12", "target": "x86_64",
        "llvm": None, "status": "guessed", "identity": "gcc 12"}))
    case("recipe without version", lambda d: d["recipes"][0].pop("version"))
    case("provenance without buildType", lambda d: d["provenance"].pop("buildType"))
    case("hash with a newline", lambda d: d.update(input_hash="ab" * 32 + "\n"))
    case("verified without identity", lambda d: d["toolchain"].update(verified={
        "family": "gcc", "version": "12", "version_line": "gcc 12", "target": "x86_64",
        "llvm": None, "status": "ok"}))
    case("version proof without evidence", lambda d: d["guards"].update(version={
        "v": {"pin": "1.0"}}))
    case("not an object", lambda d: d.clear())
    return cases


@pytest.mark.parametrize(("label", "data"), _broken(), ids=[c[0] for c in _broken()])
def test_the_validator_refuses_what_the_schema_refuses(label: str, data: dict[str, Any]) -> None:
    assert not _schema_ok(data), label
    assert not _model_ok(data), label


@pytest.mark.parametrize("size", [True, "10", 10.5])
def test_a_size_is_an_integer(size: Any) -> None:
    d = copy.deepcopy(FULL)
    d["files"][0]["size"] = size
    with pytest.raises(ManifestError, match=r"\$\.files\[0\]\.size: .* \(type\)"):
        Manifest.from_json(d, "m.json")
    d["files"][0]["size"] = 10.0  # an integer to JSON Schema, and an int once loaded
    size = Manifest.from_json(d, "m.json").files[0].size
    assert size == 10 and type(size) is int


def test_the_error_says_where_and_which_rule_in_one_short_line() -> None:
    d = copy.deepcopy(FULL)
    d["guards"]["link_test"]["flags"] = ["-O2", 7]
    with pytest.raises(ManifestError) as exc:
        Manifest.from_json(d, "m.json")
    assert str(exc.value) == ("m.json: invalid manifest: $.guards.link_test.flags[1]: must be "
                              "string (type)")
    d = copy.deepcopy(FULL)
    d["toolchain"]["cc"] = {f"k{i}": "x" * 1000 for i in range(1000)}  # a megabyte, quoted short
    with pytest.raises(ManifestError) as exc:
        Manifest.from_json(d, "m.json")
    msg = str(exc.value)
    assert msg == "m.json: invalid manifest: $.toolchain.cc: must be array (type)"
    d = copy.deepcopy(FULL)
    d["inputs"]["x\n" * 5000] = 1  # a hostile key: long, with newlines
    with pytest.raises(ManifestError) as exc:
        Manifest.from_json(d, "m.json")
    msg = str(exc.value)
    assert msg.startswith("m.json: invalid manifest: $.inputs") and msg.endswith("(type)")
    assert len(msg) < 200 and "\n" not in msg


def test_open_parts_keep_keys_the_schema_does_not_name() -> None:
    d = copy.deepcopy(FULL)
    d["toolchain"]["launcher"] = ["ccache"]
    d["toolchain"]["verified"] = {"family": "gcc", "version": "12", "version_line": "gcc 12",
                                  "target": "x86_64", "llvm": None, "status": "ok",
                                  "identity": "gcc 12", "environment": "debian-13"}
    d["recipes"][0]["build_settings"] = {"USE_X": "ON"}
    d["facts"][0]["delay_needed"] = ["d.dll"]
    m = Manifest.from_json(d, "m.json")
    assert m.to_json() == d
    assert m.toolchain.verified is not None and m.toolchain.verified.status == "ok"
    assert m.recipes is not None and m.recipes[0].build_settings == {"USE_X": "ON"}
    assert m.facts[0].delay_needed == ("d.dll",) and m.facts[0].needed is None


def test_an_invalid_manifest_is_one_line_naming_the_file(tmp_path: Path) -> None:
    p = tmp_path / "x.tar.xz.json"
    bad = dict(FULL)
    del bad["files"]
    p.write_text(json.dumps(bad))
    with pytest.raises(ManifestError) as exc:
        read_manifest_file(p)
    msg = str(exc.value)
    assert msg.startswith(f"{p}: invalid manifest") and "files" in msg and "\n" not in msg
    p.write_text('{"name": ')
    with pytest.raises(ManifestError, match="not JSON"):
        read_manifest_file(p)
    with pytest.raises(ManifestError, match="more than the 10"):
        parse_manifest(b"{" + b" " * 20 + b"}", "sidecar", limit=10)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 2**70) | st.floats(allow_nan=True)
    | st.text(max_size=8) | st.sampled_from(["ab" * 32, "lib/x.a", "../x", "ok"]),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=6), kids,
                                                              max_size=3),
    max_leaves=8)


def _places(d: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path in ``d`` (objects and arrays), its root included."""
    out = [at]
    if isinstance(d, dict):
        for k, v in d.items():
            out += _places(v, (*at, k))
    elif isinstance(d, list):
        for i, v in enumerate(d):
            out += _places(v, (*at, i))
    return out


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_a_mutated_manifest_loads_whole_or_is_one_error_line(data: st.DataObject) -> None:
    """Whatever the schema lets through the loader types without a crash, and writes back."""
    d = copy.deepcopy(FULL)
    at = data.draw(st.sampled_from(_places(d)[1:]))
    value = data.draw(_JSON)
    parent = d
    for k in at[:-1]:
        parent = parent[k]
    if data.draw(st.booleans()) and isinstance(parent, dict):
        del parent[at[-1]]
    else:
        parent[at[-1]] = value
    try:
        m = Manifest.from_json(d, "m.json")
    except ManifestError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("m.json: invalid manifest: $")
        assert len(str(exc)) < 200
        return
    assert m.to_json() == d
