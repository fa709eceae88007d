"""Provenance statements: structure (committed schema for in-toto Statement v1 + SLSA v1),
what each kind of source records, the builder on CI and on a host, and subject checks."""

from __future__ import annotations

import copy
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from prebake.errors import PrebakeError
from prebake.intake import load_workspace
from prebake.trust.provenance import build_definition, builder_id, run_details
from prebake.trust.statement import check_statement, schema_path, statement, summary

COMMIT = "0123456789abcdef0123456789abcdef01234567"
TARBALL_SHA = "ab" * 32

WORKSPACE = """\
[project]
name = "p"
version = "1.0.0"

[pins]
lib = "1.2.3"
zlib = "1.3.1"
emsdk = "3.1.6"

[platforms.wasm]
os = "emscripten"
arch = "wasm32"
[platforms.wasm.toolchain]
cc = "emcc"
cxx = "em++"
pin = "emsdk"

[stages.core]
recipes = ["lib"]
"""

RECIPE = f"""\
from prebake.recipes import Build, GitSource, LocalSource, Outputs, Recipe, UrlSource

RECIPE = Recipe(
    name="lib",
    pin="lib",
    sources=(
        GitSource("https://example.invalid/lib.git", ref="{COMMIT}", dest="src"),
        UrlSource("https://example.invalid/zlib-{{version}}.tar.gz", dest="zlib"),
        LocalSource("../vendor/extra", dest="extra"),
    ),
    platforms={{"*": Build(commands=("{{cc}} -DZ={{pins[zlib]}} -c {{src}}/a.c",))}},
    outputs=Outputs(libs={{"*": ("lib/liblib.a",)}}),
    files=("patches/fix.patch",),
)
"""


@pytest.fixture
def ws(tmp_path: Path) -> Any:
    (tmp_path / "recipes" / "patches").mkdir(parents=True)
    (tmp_path / "vendor" / "extra").mkdir(parents=True)
    (tmp_path / "vendor" / "extra" / "x.c").write_text("int x;\n")
    (tmp_path / "recipes" / "patches" / "fix.patch").write_text("--- a\n+++ b\n")
    (tmp_path / "recipes" / "lib.py").write_text(RECIPE)
    (tmp_path / "prebake.toml").write_text(WORKSPACE)
    # the tarball's digest comes from the source lock, as `prebake pin` writes it
    (tmp_path / "prebake.sources.lock").write_text(
        'version = 1\n[[source]]\nurl = "https://example.invalid/zlib-1.2.3.tar.gz"\n'
        f'sha256 = "{TARBALL_SHA}"\nsize = 1\n')
    return load_workspace(tmp_path)


def _definition(ws: Any, work: dict[str, Path] | None = None) -> dict[str, Any]:
    from prebake.sources.lock import locked_recipe, read_source_lock

    lib, unlocked = locked_recipe(ws.recipes["lib"], "wasm", "emscripten", "wasm32", ws.pins,
                                  read_source_lock(ws.root))
    assert unlocked == []
    return build_definition(unit="core/wasm", stage="core", recipes=[lib],
                            platform=ws.platforms["wasm"], pins=ws.pins, input_hash="f" * 64,
                            toolchain={"cc": ["emcc"], "pin": "emsdk", "pin_version": "3.1.6"},
                            root=ws.root, work=work)


def _schema() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(schema_path().read_text())
    return data


def _validate(doc: dict[str, Any]) -> None:
    jsonschema.validate(doc, _schema(),
                        format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def test_every_source_kind_is_resolved_with_a_digest(ws: Any) -> None:
    bd = _definition(ws)
    deps = {d["name"]: d for d in bd["resolvedDependencies"]}
    assert deps["lib:source[0]"]["digest"] == {"gitCommit": COMMIT}
    assert deps["lib:source[0]"]["uri"] == f"git+https://example.invalid/lib.git@{COMMIT}"
    assert deps["lib:source[1]"] == {"name": "lib:source[1]",
                                     "uri": "https://example.invalid/zlib-1.2.3.tar.gz",
                                     "digest": {"sha256": TARBALL_SHA}}
    assert deps["lib:source[2]"]["uri"] == "file:vendor/extra"
    assert deps["lib:file"]["digest"]["sha256"] == hashlib.sha256(b"--- a\n+++ b\n").hexdigest()
    # pins read: its own, the one a command uses, the toolchain's; nothing else
    assert bd["externalParameters"]["pins"] == {"emsdk": "3.1.6", "lib": "1.2.3", "zlib": "1.3.1"}
    assert deps["platform:wasm"]["annotations"]["toolchain"]["pin"] == "emsdk"


def test_local_tree_digest_follows_content(ws: Any) -> None:
    before = _definition(ws)
    (ws.root / "vendor" / "extra" / "x.c").write_text("int x = 1;\n")
    after = _definition(ws)
    pick = [next(d for d in b["resolvedDependencies"] if d["name"] == "lib:source[2]")
            for b in (before, after)]
    assert pick[0]["digest"] != pick[1]["digest"]


def test_a_non_commit_ref_without_a_checkout_has_no_invented_digest(ws: Any, tmp_path: Path
                                                                    ) -> None:
    from dataclasses import replace

    from prebake.model.recipe import GitSource

    r = ws.recipes["lib"]
    src = replace(r.sources[0], ref="v{version}")
    assert isinstance(src, GitSource)
    recipe = replace(r, sources=(src,))
    bd = build_definition(unit="core/wasm", stage="core", recipes=[recipe],
                          platform=ws.platforms["wasm"], pins=ws.pins, input_hash="f" * 64,
                          toolchain={}, root=ws.root, work={"lib": tmp_path / "nowhere"})
    dep = next(d for d in bd["resolvedDependencies"] if d["name"] == "lib:source[0]")
    assert "digest" not in dep and dep["uri"].endswith("@v1.2.3")


def test_definition_is_deterministic(ws: Any) -> None:
    assert json.dumps(_definition(ws), sort_keys=True) == json.dumps(_definition(ws),
                                                                     sort_keys=True)


def test_statement_validates_and_bad_ones_do_not(ws: Any) -> None:
    st = statement("p-core-1.0.0-wasm.tar.xz", "c" * 64, _definition(ws),
                   run_details(started=1_700_000_000, finished=1_700_000_100, env={}))
    _validate(st)
    assert st["predicate"]["runDetails"]["metadata"] == {
        "startedOn": "2023-11-14T22:13:20Z", "finishedOn": "2023-11-14T22:15:00Z"}
    broken: list[dict[str, Any]] = []
    for path, value in ((("_type",), "https://in-toto.io/Statement/v0.1"),
                        (("predicateType",), "https://slsa.dev/provenance/v0.2"),
                        (("subject", 0, "digest", "sha256"), "XYZ"),
                        (("predicate", "runDetails", "metadata", "startedOn"), "yesterday"),
                        (("predicate", "buildDefinition", "buildType"), "not a uri")):
        b = copy.deepcopy(st)
        node: Any = b
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = value
        broken.append(b)
    empty = copy.deepcopy(st)
    empty["subject"] = []
    broken.append(empty)
    nodigest = copy.deepcopy(st)
    nodigest["predicate"]["buildDefinition"]["resolvedDependencies"].append({"name": "x"})
    broken.append(nodigest)
    for b in broken:
        with pytest.raises(jsonschema.ValidationError):
            _validate(b)


def test_builder_is_the_ci_run_url_on_github_actions() -> None:
    env = {"GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "kiln/deps",
           "GITHUB_RUN_ID": "42", "GITHUB_RUN_ATTEMPT": "2"}
    bid, inv = builder_id(env)
    assert bid == "https://github.com/kiln/deps/actions/runs/42"
    assert inv == "https://github.com/kiln/deps/actions/runs/42/attempts/2"
    rd = run_details(started=0, finished=1, env=env)
    assert rd["metadata"]["invocationId"] == inv
    host, none = builder_id({})
    assert re.fullmatch(r"urn:prebake:host:\S+", host) and none is None


def test_check_statement_requires_this_asset_as_subject(ws: Any) -> None:
    st = statement("a-1.0.0-wasm.tar.xz", "c" * 64, _definition(ws),
                   run_details(started=0, finished=0, env={}))
    assert check_statement(st, "a-1.0.0-wasm.tar.xz", "c" * 64, "x") is st
    with pytest.raises(PrebakeError, match="subject is not"):
        check_statement(st, "a-1.0.0-wasm.tar.xz", "d" * 64, "x")
    with pytest.raises(PrebakeError, match="subject is not"):
        check_statement(st, "b-1.0.0-wasm.tar.xz", "c" * 64, "x")
    with pytest.raises(PrebakeError, match="not an in-toto"):
        check_statement({"_type": "x"}, "a", "c" * 64, "x")
    s = summary(st)
    assert s["externalParameters"]["unit"] == "core/wasm"
    assert {"name": "lib:source[0]", "uri": f"git+https://example.invalid/lib.git@{COMMIT}",
            "digest": f"gitCommit:{COMMIT}"} in s["inputs"]
