"""The reference, generated from the code's own tables so it cannot drift.

Keys of ``prebake.toml`` come from the loader's ``SCHEMA``/``SECTIONS``/``FREE_TABLES``, contract
keys from the table of ABI keys (``prebake.abikeys``, which holds their meaning too), recipe
classes and fields from the dataclasses ``prebake.recipes`` exports, placeholders from
``PLACEHOLDERS``, presets from the shipped preset files. ``descriptions.toml`` beside this
module adds one line of meaning per entry. ``python -m prebake.reference`` writes
``docs/reference.md``, ``schemas/prebake-toml.schema.json``, ``schemas/manifest.schema.json``
(from the manifest's dataclasses, ``prebake.manifest``) and what the table of ABI keys makes
(``reference/abi.py``: ``schemas/inspect.schema.json`` and the fields of ``inspect.facts.Abi``
and ``contract.terms.Contract``); ``prebake help`` prints the same text.
"""

from __future__ import annotations

import dataclasses
import json
import tomllib
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import prebake.recipes as api
from prebake import abikeys, engines, manifest
from prebake.contract.presets import load_preset, preset_names
from prebake.intake import loader
from prebake.model.ci_defaults import ci_defaults
from prebake.model.recipe import PLACEHOLDERS
from prebake.recipes.types import describe_type
from prebake.reference import abi

DESCRIPTIONS_FILE = Path(__file__).resolve().parent / "descriptions.toml"
REFERENCE_MD = Path("docs") / "reference.md"
TOML_SCHEMA = Path("schemas") / "prebake-toml.schema.json"
REGENERATE = "python -m prebake.reference"


class MissingDescription(LookupError):
    """An entry of the code's tables has no line in ``descriptions.toml`` (says what to add)."""


@cache
def _descriptions() -> dict[str, dict[str, Any]]:
    return tomllib.loads(DESCRIPTIONS_FILE.read_text(encoding="utf-8"))


def _entry(table: str, key: str) -> dict[str, str]:
    value = _descriptions().get(table, {}).get(key)
    if value is None:
        line = (f'"{key}" = {{ text = "what it means", reads = "the Facts fields it checks" }}'
                if table == "contract" and key != "extends" else f'"{key}" = "what it means"')
        raise MissingDescription(
            f"no description for {table} entry {key!r}: add the line\n    {line}\n"
            f"under [{table}] in src/prebake/reference/descriptions.toml, then run {REGENERATE}")
    return {"text": value} if isinstance(value, str) else {k: str(v) for k, v in value.items()}


# ---- prebake.toml ---------------------------------------------------------------------------

@dataclass(frozen=True)
class TomlKey:
    path: str
    type: str
    required: bool
    default: str
    meaning: str
    choices: tuple[str, ...] = ()


def _sections() -> dict[str, str]:
    """Section name -> its path in the file."""
    return dict(loader.SECTIONS)


def toml_keys() -> list[TomlKey]:
    """Every key the loader accepts, in file order, each with type, default and meaning."""
    ci = dataclasses.asdict(ci_defaults())
    out: list[TomlKey] = []
    by_path = {path: name for name, path in _sections().items()}
    for name, path in _sections().items():
        missing = set(loader.SCHEMA) - set(_sections())
        if missing:
            raise MissingDescription(f"SCHEMA sections {sorted(missing)} have no path: add them "
                                     "to SECTIONS in src/prebake/intake/loader.py")
        for key, spec in loader.SCHEMA[name].items():
            full = f"{path}.{key}" if path else key
            child = by_path.get(full) or by_path.get(f"{full}.NAME")
            entry = _entry("toml", full)
            what = spec.what if child is None or child == name else "a table"
            if f"{full}.NAME" in by_path or f"{full}.NAME" in loader.FREE_TABLES:
                what = "a table of tables" if f"{full}.NAME" in by_path else "a table"
            default = entry.get("default", "")
            if not default and name == "ci" and key in ci:
                default = f"`{ci[key]}`"  # a literal value (descriptions' defaults are prose)
            out.append(TomlKey(full, what, spec.required, default, entry["text"],
                               tuple(spec.choices)))
    for path, kind in loader.FREE_TABLES.items():
        if kind == "contract":
            continue  # its keys are listed with the contract
        what = {"version": "a string", "stage-list": "a list of strings",
                "mirror-list": "a string or a list of strings"}[kind]
        out.append(TomlKey(path, what, False, "", _entry("toml", path)["text"]))
    out.sort(key=lambda k: _order(k.path))
    return out


def _order(path: str) -> tuple[int, str]:
    tops = ["project", "pins", "platforms", "stages", "aliases", "stores", "ci", "trust",
            "sources", "mirrors"]
    head = path.split(".", 1)[0]
    return (tops.index(head) if head in tops else len(tops), path)


# ---- contracts ------------------------------------------------------------------------------

@dataclass(frozen=True)
class ContractKey:
    key: str
    type: str
    oses: tuple[str, ...]
    reads: str
    meaning: str
    choices: tuple[str, ...] = ()
    default: str = ""


_TYPES = {"choice": "a string", "text": "a string", "version": 'a version string ("2.28")',
          "bool": "true or false", "strings": "a list of strings",
          "features": "a list of strings", "keys": "a list of strings",
          "engines": "a list of ENGINE>=RELEASE strings, ENGINE one of"}


def contract_keys() -> list[ContractKey]:
    """``extends``, then every contract key of the table of ABI keys (``prebake.abikeys``)."""
    out = [ContractKey("extends", "a string", (), "", _entry("contract", "extends")["text"],
                       tuple(preset_names()))]
    for k in abikeys.contract_keys():
        kind = _TYPES[k.value.value]
        if k.value is abikeys.Value.VERSION and k.name.startswith("macos"):
            kind = 'a version string ("13.3")'
        choices = (abikeys.KNOWN_WASM_FEATURES if k.value is abikeys.Value.FEATURES
                   else tuple(engines.table().engines) if k.value is abikeys.Value.ENGINES
                   else k.contract_choices)
        out.append(ContractKey(k.name, kind, k.oses, ", ".join(k.reads), k.text, choices,
                               k.default))
    return out


# ---- recipes and placeholders ---------------------------------------------------------------

@dataclass(frozen=True)
class RecipeField:
    cls: str
    name: str
    type: str
    default: str
    meaning: str


def recipe_classes() -> list[tuple[str, str, list[RecipeField]]]:
    """(class, meaning, fields) for every dataclass ``prebake.recipes`` exports."""
    out = []
    for name in api.__all__:
        cls = getattr(api, name)
        if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
            continue
        hints = typing.get_type_hints(cls)
        fields = [RecipeField(name, f.name, describe_type(hints[f.name]), _default(f),
                              _entry("recipe", f"{name}.{f.name}")["text"])
                  for f in dataclasses.fields(cls)]
        out.append((name, _entry("recipe", name)["text"], fields))
    order = ["Recipe", "GitSource", "UrlSource", "LocalSource", "Build", "Repackage", "Outputs",
             "Snippet", "Component"]
    out.sort(key=lambda c: (order.index(c[0]) if c[0] in order else len(order), c[0]))
    return out


def _default(f: dataclasses.Field[Any]) -> str:
    if f.default is not dataclasses.MISSING:
        return repr(f.default)
    if f.default_factory is not dataclasses.MISSING:
        value = f.default_factory()
        return "{}" if value == {} else repr(value) if value != () else "()"
    return "(required)"


def placeholders() -> list[tuple[str, str]]:
    return [("pins[NAME]" if p == "pins" else p, _entry("placeholder", p)["text"])
            for p in PLACEHOLDERS]


# ---- rendering ------------------------------------------------------------------------------

def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _toml_md() -> Iterator[str]:
    yield "## prebake.toml keys"
    yield ""
    yield ("`NAME` stands for a name the workspace chooses. Every problem is reported at once "
           "with its key path and line; an unknown key gets a \"did you mean\". "
           "Editors can validate with `schemas/prebake-toml.schema.json`.")
    yield ""
    yield "| key | type | default | meaning |"
    yield "|---|---|---|---|"
    for k in toml_keys():
        kind = k.type + (f": {', '.join(k.choices)}" if k.choices else "")
        default = "required" if k.required else k.default
        yield f"| `{k.path}` | {_cell(kind)} | {_cell(default)} | {_cell(k.meaning)} |"
    yield ""


def _contract_md() -> Iterator[str]:
    yield "## Contract keys"
    yield ""
    yield ("`[platforms.NAME.contract]` (or a `--contract FILE`). A key that is not set is no "
           "rule. A fact the inspector cannot read never fails a rule, and the report lists it. "
           "A key for another os than the platform's is an error.")
    yield ""
    yield "| key | type | applies to os | facts it reads | meaning |"
    yield "|---|---|---|---|---|"
    for k in contract_keys():
        kind = k.type + (f": {', '.join(k.choices)}" if k.choices else "")
        oses = ", ".join(k.oses) if k.oses else "all"
        reads = (", ".join(f"`{r.strip()}`" for r in k.reads.split(",")) if k.reads
                 else "— (a setting)" if k.key != "extends" else "")
        meaning = k.meaning + (f" (default: {k.default})" if k.default else "")
        yield f"| `{k.key}` | {_cell(kind)} | {oses} | {reads} | {_cell(meaning)} |"
    yield ""
    yield "### Contract presets"
    yield ""
    yield ("Shipped in `prebake/contract/presets/NAME.toml`; `extends = \"NAME\"` starts from "
           "one, each other key overrides the preset's value whole.")
    yield ""
    yield "| preset | os | keys | description |"
    yield "|---|---|---|---|"
    for name in preset_names():
        p = load_preset(name)
        keys = ", ".join(f"{k} = {_toml_value(v)}" for k, v in p.contract.items() if k != "os")
        yield f"| `{name}` | {p.os} | {_cell(keys)} | {_cell(p.description)} |"
    yield ""


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return f'"{v}"'


def _recipes_md() -> Iterator[str]:
    yield "## Recipe API"
    yield ""
    yield ("A recipe file `recipes/NAME.py` defines `RECIPE = Recipe(...)` with the classes of "
           "`prebake.recipes`. Values are type-checked when the recipe is loaded: a string "
           "where a tuple is expected is an error naming the field and the file.")
    yield ""
    for cls, meaning, fields in recipe_classes():
        yield f"### {cls}"
        yield ""
        yield meaning[:1].upper() + meaning[1:] + "."
        yield ""
        yield "| field | type | default | meaning |"
        yield "|---|---|---|---|"
        for f in fields:
            yield (f"| `{f.name}` | {_cell(f.type)} | `{_cell(f.default)}` | "
                   f"{_cell(f.meaning)} |")
        yield ""


def _placeholders_md() -> Iterator[str]:
    yield "## Command placeholders"
    yield ""
    yield ("`Build.commands` and `Build.env` values are `str.format` templates; an unknown "
           "placeholder is an error when the recipe is loaded. `{cc}`, `{cxx}` and `{ar}` "
           "expand to whole argv words inside a tuple command.")
    yield ""
    yield "| placeholder | meaning |"
    yield "|---|---|"
    for name, meaning in placeholders():
        yield f"| `{{{name}}}` | {_cell(meaning)} |"
    yield ""
    yield "### CMake recipes"
    yield ""
    yield ("prebake writes a CMake toolchain file per platform from its table (`prebake "
           "toolchain cmake` prints it): pass it with `-DCMAKE_TOOLCHAIN_FILE={cmake_toolchain}` "
           "and never name the compilers yourself (`-DCMAKE_C_COMPILER={cc}` is refused when "
           "the recipe is loaded). For Emscripten the file includes Emscripten's own "
           "`Emscripten.cmake`, so `emcmake` is not needed. Tools the build runs on the build "
           "machine are `HostTool`s:")
    yield ""
    yield "```python"
    yield 'PROTOC = HostTool("protoc", "3.21.12", version_pattern=r"libprotoc (\\S+)")'
    yield "Build(commands=("
    yield ('    "cmake -S {src} -B {build} -DCMAKE_TOOLCHAIN_FILE={cmake_toolchain} '
           '-DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX={prefix} '
           '-DProtobuf_PROTOC_EXECUTABLE={host_tools[protoc]}",')
    yield '    "cmake --build {build} -j{jobs}",'
    yield '    "cmake --install {build}",'
    yield "))"
    yield "```"
    yield ""


PARTS: tuple[Callable[[], Iterator[str]], ...] = (_toml_md, _contract_md, _recipes_md,
                                                   _placeholders_md)
TOPICS: Mapping[str, tuple[Callable[[], Iterator[str]], ...]] = {
    "toml": (_toml_md,), "contract": (_contract_md,),
    "recipes": (_recipes_md, _placeholders_md), "placeholders": (_placeholders_md,),
}


def render(topic: str | None = None) -> str:
    """The reference as Markdown: one topic, or the whole ``docs/reference.md``."""
    if topic is not None:
        return "\n".join(line for fn in TOPICS[topic] for line in fn()) + "\n"
    head = ["# prebake reference", "",
            f"Generated from the code by `{REGENERATE}` (do not edit by hand; a test fails "
            "when it is stale). `prebake help toml|contract|recipes|placeholders` prints each "
            "part.", ""]
    body = [line for fn in PARTS for line in fn()]
    return "\n".join(head + body).rstrip("\n") + "\n"


# ---- JSON Schema of prebake.toml ------------------------------------------------------------

def _json_for_check(check: Callable[[Any], bool]) -> dict[str, Any]:
    table: dict[Any, dict[str, Any]] = {
        loader._is_str: {"type": "string"},
        loader._is_bool: {"type": "boolean"},
        loader._is_table: {"type": "object"},
        loader._is_str_list: {"type": "array", "items": {"type": "string"}},
        loader._is_argv: {"oneOf": [{"type": "string", "pattern": "\\S"},
                                    {"type": "array", "items": {"type": "string"},
                                     "minItems": 1}]},
        loader._is_str_table: {"type": "object", "additionalProperties": {"type": "string"}},
        loader._is_minutes: {"type": "integer", "minimum": 1, "maximum": 4320},
    }
    if check not in table:
        raise MissingDescription(f"no JSON Schema for the check {check.__name__!r}: add it to "
                                 "_json_for_check in src/prebake/reference/generate.py")
    return dict(table[check])


def _contract_schema() -> dict[str, Any]:
    props: dict[str, Any] = {}
    for k in contract_keys():
        if k.type.startswith("a version string"):
            frag: dict[str, Any] = {"type": "string", "pattern": "^[0-9]+(\\.[0-9]+){0,3}$"}
        elif k.type == "true or false":
            frag = {"type": "boolean"}
        elif k.type.startswith("a list of ENGINE>=RELEASE"):
            names = "|".join(k.choices)
            frag = {"type": "array", "items": {"type": "string", "pattern": (
                rf"^\s*({names})\s*>=\s*[0-9]+(\.[0-9]+){{0,3}}\s*$"),
                "examples": ["chrome>=137"]}}
        elif k.type == "a list of strings":
            frag = {"type": "array", "items": {"type": "string"}}
            if k.choices:
                frag["items"] = {"enum": list(k.choices)}
        else:
            frag = {"type": "string"}
            if k.choices:
                frag = {"enum": list(k.choices)}
        frag["description"] = k.meaning
        props[k.key] = frag
    return {"type": "object", "properties": props, "additionalProperties": False}


def _section_schema(name: str) -> dict[str, Any]:
    path = _sections()[name]
    by_path = {p: n for n, p in _sections().items()}
    props: dict[str, Any] = {}
    for key, spec in loader.SCHEMA[name].items():
        full = f"{path}.{key}" if path else key
        meaning = _entry("toml", full)["text"]
        if full in by_path:
            frag = _section_schema(by_path[full])
        elif f"{full}.NAME" in by_path:
            frag = {"type": "object",
                    "additionalProperties": _section_schema(by_path[f"{full}.NAME"])}
        elif f"{full}.NAME" in loader.FREE_TABLES:
            kind = loader.FREE_TABLES[f"{full}.NAME"]
            inner: dict[str, Any] = (
                {"type": "string", "pattern": loader._VERSION.pattern} if kind == "version"
                else {"oneOf": [{"type": "string"}, {"type": "array", "minItems": 1,
                                                     "items": {"type": "string"}}]}
                if kind == "mirror-list" else {"type": "array", "items": {"type": "string"}})
            frag = {"type": "object", "additionalProperties": inner}
        elif loader.FREE_TABLES.get(full) == "contract":
            frag = _contract_schema()
        else:
            frag = _json_for_check(spec.check)
            if spec.choices:
                frag["enum"] = list(spec.choices)
        frag["description"] = meaning
        props[key] = frag
    out: dict[str, Any] = {"type": "object", "properties": props,
                           "additionalProperties": False}
    required = [k for k, s in loader.SCHEMA[name].items() if s.required]
    if required:
        out["required"] = required
    return out


def toml_schema() -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of ``prebake.toml``, from the loader's own tables."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://prebake.invalid/schemas/prebake-toml.schema.json",
        "title": "prebake.toml",
        "description": f"The workspace file of prebake (generated by `{REGENERATE}`; "
                       "docs/reference.md explains each key).",
        **_section_schema(""),
    }


def toml_schema_text() -> str:
    return json.dumps(toml_schema(), indent=2, ensure_ascii=False) + "\n"


def generated(root: Path) -> list[tuple[Path, str]]:
    """Every generated file (relative to the repository ``root``) with the text it must hold:
    the reference, the schemas, and the modules whose fields the table of ABI keys makes."""
    out = [(REFERENCE_MD, render()), (TOML_SCHEMA, toml_schema_text()),
           (manifest.SCHEMA_FILE, manifest.schema_text()),
           (abi.INSPECT_SCHEMA, abi.inspect_schema_text())]
    for rel, fields in abi.MODULES.items():
        out.append((rel, abi.with_fields((root / rel).read_text(encoding="utf-8"), fields(),
                                         str(rel))))
    return out


def write(root: Path) -> list[Path]:
    """Write the generated files under ``root`` (the repository); return the ones changed."""
    changed = []
    for rel, text in generated(root):
        path = root / rel
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            changed.append(path)
    return changed
