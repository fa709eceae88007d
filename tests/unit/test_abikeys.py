"""The table of ABI keys and every view derived from it agree, with each other and with the
committed schemas (the generated files are held to the generator in test_reference.py): a key
added to the table brings its fields and schema along, and fails here until it has its rule."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from prebake import abikeys
from prebake.abikeys import Value
from prebake.contract import rules
from prebake.contract.terms import ONLY_FOR_OS, SETTINGS, Contract, parse_contract
from prebake.diff.compare import FACT_RULES, TOP_LEVEL_FACTS
from prebake.inspect.archive import summarise
from prebake.inspect.facts import ABI_FIELDS, FACT_FIELDS, Abi, Facts
from prebake.reference import abi
from prebake.report.data import CELL_FACTS

ROOT = Path(__file__).resolve().parents[2]


def _schema(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((ROOT / "schemas" / name).read_text(encoding="utf-8"))
    return data


def test_abi_dataclass_has_one_attribute_per_abi_fact() -> None:
    attrs = [f.name for f in dataclasses.fields(Abi)]
    assert sorted(attrs) == sorted(k.attribute for k in abikeys.abi_facts())
    assert set(Facts(path="x").abi.to_json()) == {k.name for k in abikeys.abi_facts()}


def test_top_level_facts_are_fields_of_every_result() -> None:
    assert set(TOP_LEVEL_FACTS) <= set(FACT_FIELDS)
    assert all(k.fact in (None, "abi", "top") for k in abikeys.KEYS)


def test_contract_fields_are_the_tables_contract_keys_in_order() -> None:
    assert [f.name for f in dataclasses.fields(Contract)] == [
        k.name for k in abikeys.contract_keys()]


def test_every_rule_key_of_the_table_has_its_rule_and_every_rule_its_key() -> None:
    assert set(rules.RULES_BY_KEY) == {k.name for k in abikeys.KEYS if k.rule}
    assert [r.key for r in rules.RULES] == [
        k.name for k in abikeys.contract_keys() if not k.setting and not k.recipe]
    # a key judged on a recipe's proof (the license) has no per-binary rule
    assert [k.name for k in abikeys.contract_keys() if k.recipe] == ["allowed_licenses"]
    assert tuple(k.name for k in abikeys.contract_keys() if k.setting) == SETTINGS


def test_a_key_added_to_the_table_alone_is_a_field_a_schema_entry_and_a_missing_rule(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """What a new entry brings with it (the fields and the schema are generated from the
    table) and what it still needs: its rule, without which the rules do not load."""
    key = abikeys.AbiKey("exec_heap", "made up for this test", Value.BOOL, fact="abi",
                         members=abikeys.Combine.ANY, rule=True, reads=("abi.exec_heap",))
    monkeypatch.setattr(abikeys, "KEYS", (*abikeys.KEYS, key))
    assert "    exec_heap: bool | None = None\n" in abi.abi_fields()
    assert "    exec_heap: bool | None = None\n" in abi.contract_fields()
    schema = abi.inspect_schema()["$defs"]["abi"]
    assert schema["properties"]["exec_heap"] == {"type": ["boolean", "null"]}
    assert "exec_heap" in schema["required"]
    with pytest.raises(LookupError, match="exec_heap"):
        rules._bound()


def test_archive_members_combine_as_the_table_says() -> None:
    """``summarise`` reads each key's ``members``: the highest glibc floor, any thread use, the
    common EH model with ``mixed`` when they disagree and ``none`` agreeing with either."""
    a, b = Facts(path="a.o"), Facts(path="b.o")
    a.abi.glibc_max, b.abi.glibc_max = "2.17", "2.28"
    a.abi.threads, b.abi.threads = None, True
    a.abi.eh, b.abi.eh = "none", "native"
    f = Facts(path="lib.a")
    summarise(f, [a, b])
    assert (f.abi.glibc_max, f.abi.threads, f.abi.eh) == ("2.28", True, "native")
    b.abi.eh = "emscripten-legacy"
    c = Facts(path="c.o")
    c.abi.eh = "wasm"
    summarise(f, [a, b, c])
    assert f.abi.eh == "mixed" and f.counts["eh"] == {"none": 1, "emscripten-legacy": 1,
                                                      "wasm": 1}


def test_derived_views() -> None:
    assert ABI_FIELDS[0] == ("eh", "eh") and ("async", "async_") in ABI_FIELDS
    assert ONLY_FOR_OS["glibc_max"] == ("linux",)
    assert set(ONLY_FOR_OS) == {k.name for k in abikeys.contract_keys() if k.oses}
    assert FACT_RULES["glibc_max"][0] == "raised" and FACT_RULES["needed"][0] == "added"
    for name in list(FACT_RULES) + list(CELL_FACTS):
        assert abikeys.BY_NAME[name].fact is not None, f"{name} is no fact"


def test_a_fact_entry_has_its_choices_and_a_contract_key_its_reads() -> None:
    for k in abikeys.KEYS:
        assert (k.value is Value.CHOICE) == bool(k.choices), k.name
        assert k.text, k.name
        if k.rule:
            assert k.reads, f"{k.name}: a rule names the facts it reads"
            for fact in k.reads:
                top = fact.removeprefix("abi.")
                assert top in abikeys.BY_NAME or top == "symbols", f"{k.name} reads {fact}"


def test_toml_schema_contract_agrees_with_the_table() -> None:
    """The generated prebake.toml schema's contract (test_reference keeps it current)."""
    platforms = _schema("prebake-toml.schema.json")["properties"]["platforms"]
    contract = platforms["additionalProperties"]["properties"]["contract"]["properties"]
    assert list(contract) == ["extends", *(k.name for k in abikeys.contract_keys())]
    for k in abikeys.contract_keys():
        if k.value is Value.CHOICE:
            assert contract[k.name]["enum"] == list(k.contract_choices), k.name


def test_parsing_follows_the_value_kind() -> None:
    c, problems = parse_contract({"eh": "wasm", "glibc_max": "2.28", "threads": True,
                                  "features_forbidden": ["relaxed-simd"],
                                  "allow_unknown": ["eh"]})
    assert problems == []
    assert (c.eh, c.glibc_max, c.threads, c.features_forbidden, c.allow_unknown) == (
        "wasm", "2.28", True, ("relaxed-simd",), ("eh",))
    _, problems = parse_contract({"eh": "wsam", "glibc_max": "new", "threads": "yes",
                                  "features_forbidden": ["relaxed-smd"],
                                  "allow_unknown": ["ehh"], "glibc": "2.28"})
    said = {p.key: p.message for p in problems}
    assert "must be one of wasm" in said["contract.eh"]
    assert "version string" in said["contract.glibc_max"]
    assert "true or false" in said["contract.threads"]
    assert "did you mean 'relaxed-simd'" in said["contract.features_forbidden"]
    assert "did you mean 'eh'" in said["contract.allow_unknown"]
    assert "did you mean 'glibc_max'" in said["contract.glibc"]
