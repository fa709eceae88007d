"""The reference and the prebake.toml schema are generated from the code and cannot drift.

The schema test runs every key of the loader's SCHEMA (and every contract key) through both the
loader and ``schemas/prebake-toml.schema.json``: a valid value passes both, a value of the wrong
type and an unknown key fail both; the example workspaces pass both.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import prebake.recipes as api
from prebake.cli import main
from prebake.contract.terms import ONLY_FOR_OS
from prebake.errors import ConfigError
from prebake.intake import load_workspace
from prebake.intake.loader import SCHEMA, SECTIONS
from prebake.reference import REGENERATE, contract_keys, generated, render, toml_schema_text
from tests import support

ROOT = support.ROOT
SCHEMA_FILE = ROOT / "schemas" / "prebake-toml.schema.json"
REFERENCE = ROOT / "docs" / "reference.md"


def test_committed_files_are_what_the_generator_writes() -> None:
    """The reference, the schemas (prebake.toml's, the manifest's, inspect --json's) and the
    fields the table of ABI keys makes (Abi, Contract)."""
    assert SCHEMA_FILE.read_text() == toml_schema_text(), f"stale: run {REGENERATE}"
    assert REFERENCE.read_text() == render(), f"stale: run {REGENERATE}"
    for rel, text in generated(ROOT):
        assert (ROOT / rel).read_text(encoding="utf-8") == text, f"{rel} stale: run {REGENERATE}"


def test_every_placeholder_field_and_key_is_in_the_reference() -> None:
    text = REFERENCE.read_text()
    for p in api.PLACEHOLDERS:
        assert f"`{{{'pins[NAME]' if p == 'pins' else p}}}`" in text, p
    for wanted in ("src", "build", "prefix", "deps_prefix", "jobs", "cc", "cxx", "ar", "version",
                   "pins[NAME]", "cmake_toolchain"):
        assert f"| `{{{wanted}}}` |" in text
    for name in api.__all__:
        cls = getattr(api, name)
        if isinstance(cls, type) and hasattr(cls, "__dataclass_fields__"):
            section = text.split(f"### {name}\n", 1)[1].split("\n### ", 1)[0]
            for field in cls.__dataclass_fields__:
                assert f"| `{field}` |" in section, f"{name}.{field}"
    for section, path in SECTIONS.items():
        for key in SCHEMA[section]:
            full = f"{path}.{key}" if path else key
            assert f"| `{full}` |" in text, full
    for k in contract_keys():
        assert re.search(rf"^\| `{k.key}` \|.*\|", text, re.M), k.key
    assert "emcmake" in text and "`platforms.NAME.toolchain.cmake_toolchain`" in text


def test_a_key_without_a_description_fails_with_what_to_add(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from prebake.intake import loader
    from prebake.reference import generate as reference

    reference._descriptions.cache_clear()
    grown = {**SCHEMA, "toolchain": {**SCHEMA["toolchain"], "sysroot": loader.STR}}
    monkeypatch.setattr(loader, "SCHEMA", grown)
    with pytest.raises(reference.MissingDescription) as info:
        render()
    assert '"platforms.NAME.toolchain.sysroot" = "what it means"' in str(info.value)
    assert "under [toml] in src/prebake/reference/descriptions.toml" in str(info.value)


def test_readme_links_the_reference_and_shows_cmake_for_emscripten() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "docs/reference.md" in readme
    assert "emcmake" in readme and "{cmake_toolchain}" in readme


# ---- the schema and the loader agree, key by key ------------------------------------------

def _toml(data: dict[str, Any]) -> str:
    """A small TOML writer: tables as [headers], values in JSON syntax (valid TOML here)."""
    lines: list[str] = []

    def scalars(d: dict[str, Any]) -> None:
        for k, v in d.items():
            if not isinstance(v, dict):
                lines.append(f"{json.dumps(k)} = {json.dumps(v)}")

    def walk(d: dict[str, Any], prefix: list[str]) -> None:
        for k, v in d.items():
            if isinstance(v, dict):
                path = [*prefix, k]
                lines.append("[" + ".".join(json.dumps(p) for p in path) + "]")
                scalars(v)
                walk(v, path)

    scalars(data)
    walk(data, [])
    return "\n".join(lines) + "\n"


def _base(os: str = "linux", arch: str = "x86_64") -> dict[str, Any]:
    return {"project": {"name": "demo", "version": "1.0.0"},
            "pins": {"tc": "1.0"},
            "platforms": {"p": {"os": os, "arch": arch,
                                "toolchain": {"cc": "cc", "cxx": "c++"}}},
            "stages": {"core": {"recipes": []}},
            "aliases": {"all": ["core"]},
            "stores": {"s": {"url": "file://./r"}}}


def _at(doc: dict[str, Any], path: str) -> dict[str, Any]:
    node = doc
    for part in path.split(".") if path else []:
        node = node.setdefault(part, {})
    return node


def _valid(frag: dict[str, Any]) -> Any:
    if "enum" in frag:
        return frag["enum"][0]
    if "examples" in frag:  # a pattern no fixed sample meets (contract.engines)
        return frag["examples"][0]
    if "oneOf" in frag:
        return _valid(frag["oneOf"][0])
    kind = frag.get("type")
    if kind == "string":
        return "1.0" if "pattern" in frag else "x"
    if kind == "boolean":
        return True
    if kind == "integer":
        return frag.get("minimum", 1)
    if kind == "array":
        items = frag.get("items", {})
        return [_valid(items)] if "enum" in items or "examples" in items else ["x"]
    return {}


def _invalid(frag: dict[str, Any]) -> Any:
    kind = frag.get("type") or ("string" if "oneOf" in frag or "enum" in frag else "object")
    return {"string": 12345, "boolean": "yes", "integer": "5", "array": 7,
            "object": 5}.get(kind, 5)


def _schema() -> dict[str, Any]:
    return json.loads(SCHEMA_FILE.read_text())


def _frag(path: str) -> dict[str, Any]:
    node = _schema()
    for part in path.split("."):
        node = node["additionalProperties"] if part == "NAME" else node["properties"][part]
    return node


def _cases() -> list[tuple[str, str]]:
    """(section path, key) for every key of the loader's SCHEMA and every contract key."""
    out = [(path, key) for section, path in SECTIONS.items() for key in SCHEMA[section]]
    out += [("platforms.NAME.contract", k.key) for k in contract_keys()]
    return [*out, ("pins", "NAME"), ("aliases", "NAME")]


# what the loader says about a value's type or a key's name (not cross-field rules)
TYPE_LEVEL = ("must be", "unknown key", "unknown contract key", "required")


def _type_problems(tmp: Path, doc: dict[str, Any], key: str) -> list[str]:
    (tmp / "prebake.toml").write_text(_toml(doc))
    try:
        load_workspace(tmp)
    except ConfigError as exc:
        return [f"{p.key}: {p.message}" for p in exc.problems
                if p.key == key and p.message.startswith(TYPE_LEVEL)]
    return []


def _doc_with(section: str, key: str, value: Any) -> tuple[dict[str, Any], str]:
    """The base workspace with ``section.key = value``; the platform's os fits the key."""
    oses = ONLY_FOR_OS.get(key, ("linux",)) if section.endswith("contract") else ("linux",)
    arch = "wasm32" if oses[0] in ("emscripten", "wasi") else "x86_64"
    doc = _base(oses[0], arch)
    concrete = (section.replace("platforms.NAME", "platforms.p")
                .replace("stages.NAME", "stages.core").replace("stores.NAME", "stores.s"))
    key = {"pins": "tc", "aliases": "all"}.get(section, key) if key == "NAME" else key
    _at(doc, concrete)[key] = value
    return doc, f"{concrete}.{key}" if concrete else key


@pytest.mark.parametrize(("section", "key"), _cases())
def test_each_key_means_the_same_to_the_loader_and_the_schema(tmp_path: Path, section: str,
                                                              key: str) -> None:
    frag = _frag(f"{section}.{key}" if section else key)
    validator = jsonschema.Draft202012Validator(_schema())
    if frag.get("type") != "object":  # a table is checked through its own keys
        doc, where = _doc_with(section, key, _valid(frag))
        assert not list(validator.iter_errors(doc)), where
        assert _type_problems(tmp_path, doc, where) == []
    doc, where = _doc_with(section, key, _invalid(frag))
    assert list(validator.iter_errors(doc)), f"schema accepts a bad {where}"
    assert _type_problems(tmp_path, doc, where), f"loader accepts a bad {where}"
    if key != "NAME":
        doc, where = _doc_with(section, f"{key}x", "x")
        assert list(validator.iter_errors(doc)), f"schema accepts unknown {where}"
        assert _type_problems(tmp_path, doc, where), f"loader accepts unknown {where}"


@pytest.mark.parametrize("example", ["sdk", "addon"])
def test_the_example_workspaces_pass_both(example: str) -> None:
    root = ROOT / "examples" / example
    data = tomllib.loads((root / "prebake.toml").read_text())
    jsonschema.validate(data, _schema())
    load_workspace(root)


def test_help_prints_the_reference(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["help", "recipes"]) == 0
    out = capsys.readouterr().out
    assert "### Outputs" in out and "| `libs` |" in out and "{cmake_toolchain}" in out
    assert main(["help", "toml"]) == 0
    assert "| `platforms.NAME.contract` |" in capsys.readouterr().out
    assert main(["help", "contract"]) == 0
    assert "`manylinux_2_28_x86_64`" in capsys.readouterr().out
    assert main(["help", "recipe"]) == 2
    assert "did you mean 'recipes'?" in capsys.readouterr().err
