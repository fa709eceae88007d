"""What is generated from the table of ABI keys (``prebake.abikeys``): the fields of
``inspect.facts.Abi`` and ``contract.terms.Contract``, written between two marker lines in
those modules so that mypy reads them as plain dataclass fields, and
``schemas/inspect.schema.json``. ``python -m prebake.reference`` writes them;
tests/unit/test_reference.py fails when a committed copy is stale.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prebake import abikeys
from prebake.abikeys import AbiKey, Value
from prebake.inspect.facts import FACT_FIELDS, SYMBOL_LISTS

INSPECT_SCHEMA = Path("schemas") / "inspect.schema.json"
BEGIN = "    # ---- generated from prebake.abikeys.KEYS by `python -m prebake.reference` ----\n"
END = "    # ---- end of the generated fields ----\n"


def abi_fields() -> str:
    """``Abi``'s fields: one per fact under ``abi``, in the table's order."""
    lines = []
    for k in abikeys.abi_facts():
        annotation, default = abikeys.python_type(k)
        lines.append(f"    {k.attribute}: {annotation} = {default}\n")
    return "".join(lines)


def contract_fields() -> str:
    """``Contract``'s fields: one per contract key, in the table's order."""
    lines = []
    for k in abikeys.contract_keys():
        annotation, default = abikeys.python_type(k, contract=True)
        lines.append(f"    {k.attribute}: {annotation} = {default}\n")
    return "".join(lines)


# module (relative to the repository) -> what goes between its markers
MODULES: dict[Path, Callable[[], str]] = {
    Path("src/prebake/inspect/facts.py"): abi_fields,
    Path("src/prebake/contract/terms.py"): contract_fields,
}


def with_fields(text: str, fields: str, where: str) -> str:
    """``text`` (a module's source) with ``fields`` between its marker lines."""
    found = re.search(re.escape(BEGIN) + r"(.*?)" + re.escape(END), text, re.S)
    if found is None:
        raise LookupError(f"{where}: no generated-fields markers ({BEGIN.strip()})")
    return text[:found.start(1)] + fields + text[found.end(1):]


def fact_schema(key: AbiKey) -> dict[str, Any]:
    """The JSON Schema fragment of a fact's value in ``inspect --json`` (null: unknown)."""
    frag: dict[str, Any]
    if key.value is Value.CHOICE:
        frag = {"enum": [*key.choices, None]}
    elif key.value is Value.VERSION:
        frag = {"type": ["string", "null"], "pattern": "^[0-9]+(\\.[0-9]+)*$"}
    elif key.value is Value.BOOL:
        frag = {"type": ["boolean", "null"]}
    elif key.value is Value.TEXT:
        frag = {"type": ["string", "null"]}
    else:
        frag = {"type": ["array", "null"], "items": {"type": "string"}}
    if key.describe:
        frag = {"description": key.describe, **frag}
    return frag


def _listed(of: str) -> dict[str, Any]:
    return {"type": "array", "items": {"$ref": f"#/$defs/{of}"}}


_SYMBOL = {"type": ["array", "null"], "items": {
    "type": "object", "required": ["name", "demangled"], "additionalProperties": False,
    "properties": {"name": {"type": "string"}, "demangled": {"type": ["string", "null"]}}}}

# the fields of a result that are no ABI key (the table says the others)
_OTHER_FIELDS: dict[str, Any] = {
    "path": {"type": "string"},
    "abi": {"$ref": "#/$defs/abi"},
    "size": {"type": ["integer", "null"], "minimum": 0},
    "evidence": {"type": "object",
                 "additionalProperties": {"type": "array", "items": {"type": "string"}}},
    "counts": {"type": "object", "additionalProperties": {
        "type": "object", "additionalProperties": {"type": "integer", "minimum": 0}}},
    "details": {"type": "object",
                "description": "format-specific extras, not part of the stable contract"},
    "error": {"type": "string", "description": "why this path (or member) could not be read"},
    "members": _listed("facts"),
    "slices": _listed("facts"),
    "engines": {
        "description": "wasm results (not their members): the engines predicted to run it, "
                       "from its facts and prebake/engines.toml (a prediction, not a run): "
                       "the table's features it needs, those its facts cannot rule out "
                       "(unsure: why), why its feature list may lack more (partial), feature "
                       "names no row means (foreign); per engine the first release that runs "
                       "it (runs; null: every release), the features no release has (lacks), "
                       "or what the table cannot say (undecided)",
        "type": "object",
        "required": ["needs", "unsure", "partial", "foreign", "runs", "lacks", "undecided"],
        "additionalProperties": False,
        "properties": {
            "needs": {"type": "array", "items": {"type": "string"}},
            "unsure": {"type": "object", "additionalProperties": {"type": "string"}},
            "partial": {"type": ["string", "null"]},
            "foreign": {"type": "array", "items": {"type": "string"}},
            "runs": {"type": "object", "additionalProperties": {"type": ["string", "null"]}},
            "lacks": {"type": "object", "additionalProperties": {
                "type": "array", "items": {"type": "string"}}},
            "undecided": {"type": "object", "additionalProperties": {
                "type": "array", "items": {"type": "string"}}},
        },
    },
}

_TRUST = {
    "description": "per .tar.xz asset named: provenance summary and signature status "
                   "(prebake.trust)",
    "type": "array",
    "items": {
        "type": "object",
        "required": ["asset", "sha256", "provenance", "provenance_error", "signature"],
        "properties": {
            "asset": {"type": "string"},
            "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
            "provenance": {"type": ["object", "null"]},
            "provenance_error": {"type": ["string", "null"]},
            "signature": {
                "type": "object",
                "required": ["status"],
                "properties": {
                    "status": {"enum": ["unsigned", "unchecked", "valid", "invalid"]},
                    "principal": {"type": "string"},
                    "reason": {"type": "string"},
                },
            },
        },
    },
}


def inspect_schema() -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of ``prebake inspect --json``: the facts each result has,
    the ABI facts and their values from the table."""
    top = {k.name: fact_schema(k) for k in abikeys.KEYS if k.fact == "top"}
    fields = {name: _OTHER_FIELDS.get(name) or top[name] for name in FACT_FIELDS}
    props = {**fields, "counts": _OTHER_FIELDS["counts"], "error": _OTHER_FIELDS["error"],
             "members": _OTHER_FIELDS["members"], "slices": _OTHER_FIELDS["slices"],
             "engines": _OTHER_FIELDS["engines"],
             **dict.fromkeys(SYMBOL_LISTS, _SYMBOL)}
    abi = abikeys.abi_facts()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://prebake.dev/schemas/inspect.schema.json",
        "title": "prebake inspect --json",
        "description": "Output of `prebake inspect --json` (docs/architecture.md, 'inspect "
                       "--json fields'). Unknown facts are null, never guessed. Generated from "
                       "prebake.abikeys by `python -m prebake.reference`.",
        "type": "object",
        "required": ["schema_version", "results"],
        "additionalProperties": False,
        "properties": {
            "schema_version": {"const": 1},
            "results": _listed("facts"),
            "trust": _TRUST,
        },
        "$defs": {
            "facts": {"type": "object", "required": list(FACT_FIELDS),
                      "additionalProperties": False, "properties": props},
            "abi": {"type": "object", "additionalProperties": False,
                    "required": [k.name for k in abi],
                    "properties": {k.name: fact_schema(k) for k in abi}},
        },
    }


def inspect_schema_text() -> str:
    return json.dumps(inspect_schema(), indent=2, ensure_ascii=False) + "\n"
