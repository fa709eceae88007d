"""Typed JSON records: a frozen dataclass is the schema, the validator and the loader at once.

A document prebake reads back (the asset manifest) is declared once, as dataclasses: field types
say the JSON types, a field without a default is a required key, ``field(metadata=rule(...))``
adds what a type cannot say (a pattern, a minimum, a description, a JSON name). From that one
declaration come the JSON Schema (:func:`schema_of`, committed under ``schemas/`` and held to the
code by a test), the check of a document read from disk (fastjsonschema against that schema, the
first failure as one short line: :func:`problem`) and the typed value (:func:`load`, :func:`dump`).
So a key cannot be allowed by the schema and refused by the code, or the other way round.

The conventions, kept few on purpose:

- ``X | None`` on a required field is a JSON ``null``; on a field with a default it is the
  absence of the key (add ``rule(null=True)`` when ``null`` is also allowed there).
- A record with a ``raw`` field is open: keys it does not declare are allowed, and ``raw`` keeps
  the object exactly as it was read, so writing it back gives the same JSON (``dump``); a record
  without one is closed (``additionalProperties: false``).
- A class-level ``SCHEMA`` (a ``ClassVar``) adds rules that span fields (``anyOf``) or a
  description.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any, Literal, TypeVar, Union

import fastjsonschema
from fastjsonschema import JsonSchemaValueException

T = TypeVar("T")

#: the name of the field that makes a record open (it keeps the object as read)
RAW = "raw"
#: the longest JSON path an error line gives (a key is text from the file, of any length)
_MAX_PATH = 80
#: the longest reason an error line gives (after the file's name)
_MAX_REASON = 160


def rule(description: str | None = None, *, json: str | None = None, null: bool = False,
         items: Mapping[str, Any] | None = None, **schema: Any) -> dict[str, Any]:
    """A field's ``metadata``: ``json`` is its key when that is no Python name (``buildType``),
    ``null`` allows JSON ``null`` on an optional key, ``items`` adds rules to each element of an
    array, and the rest are JSON Schema keywords as they are spelled there (``pattern``,
    ``minimum``, ``minLength``; ``not_`` for ``not``)."""
    out: dict[str, Any] = {"schema": {k.rstrip("_"): v for k, v in schema.items()}}
    if description is not None:
        out["schema"]["description"] = description
    if json is not None:
        out["json"] = json
    if items is not None:
        out["items"] = dict(items)
    out["null"] = null
    return out


@dataclasses.dataclass(frozen=True)
class _Field:
    name: str
    key: str
    hint: Any
    required: bool
    null: bool
    schema: Mapping[str, Any]
    items: Mapping[str, Any]


@cache
def _fields(cls: type) -> tuple[_Field, ...]:
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        if f.name == RAW:
            continue
        meta = f.metadata
        has_default = (f.default is not dataclasses.MISSING
                       or f.default_factory is not dataclasses.MISSING)
        out.append(_Field(f.name, meta.get("json", f.name), hints[f.name],
                          not has_default,
                          meta.get("null", False), meta.get("schema", {}), meta.get("items", {})))
    return tuple(out)


def _is_open(cls: type) -> bool:
    return any(f.name == RAW for f in dataclasses.fields(cls))


def _optional(hint: Any) -> Any | None:
    """``X`` of ``X | None``, else ``None``."""
    if typing.get_origin(hint) in (Union, types.UnionType):
        rest = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(rest) == 1 and len(typing.get_args(hint)) == 2:
            return rest[0]
    return None


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    kind = schema.get("type")
    if isinstance(kind, str):
        return {**schema, "type": [kind, "null"]}
    return {"anyOf": [schema, {"type": "null"}]}


def _type_schema(hint: Any, items: Mapping[str, Any] | None = None) -> dict[str, Any]:
    inner = _optional(hint)
    if inner is not None:
        return _nullable(_type_schema(inner, items))
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return schema_of(hint)
    if hint is str:
        return {"type": "string"}
    if hint is bool:
        return {"type": "boolean"}
    if hint is int:
        return {"type": "integer"}
    if hint is float:
        return {"type": "number"}
    if hint is Any:
        return {}
    if origin is Literal:
        return {"const": args[0]} if len(args) == 1 else {"enum": list(args)}
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return {"type": "array", "items": {**_type_schema(args[0]), **(items or {})}}
    if origin in (Mapping, dict) and args[0] is str:
        value = _type_schema(args[1])
        return {"type": "object", **({"additionalProperties": value} if value else {})}
    raise TypeError(f"no JSON Schema for the type {hint!r}")


def _field_schema(f: _Field) -> dict[str, Any]:
    if f.required:
        base = _type_schema(f.hint, f.items)
    else:  # an optional key: `| None` is its absence, not a JSON null
        inner = _optional(f.hint)
        if inner is None:
            raise TypeError(f"optional field {f.name} must be typed `X | None`")
        base = _type_schema(inner, f.items)
        base = _nullable(base) if f.null else base
    rules = dict(f.schema)
    description = rules.pop("description", None)
    return {**({"description": description} if description else {}), **base, **rules}


@cache
def schema_of(cls: type) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a record class and every record it holds."""
    fields = _fields(cls)
    for f in fields:
        if f.null and f.required:
            raise TypeError(f"{cls.__name__}.{f.name}: a required field says null in its type")
        if f.null and not _is_open(cls):
            raise TypeError(f"{cls.__name__}.{f.name}: an optional null key needs an open record "
                            "(its raw keeps absent apart from null)")
    extra: Mapping[str, Any] = getattr(cls, "SCHEMA", {})
    out: dict[str, Any] = {}
    if "description" in extra:
        out["description"] = extra["description"]
    out["type"] = "object"
    if not _is_open(cls):
        out["additionalProperties"] = False
    required = [f.key for f in fields if f.required]
    if required:
        out["required"] = required
    out["properties"] = {f.key: _field_schema(f) for f in fields}
    out.update({k: v for k, v in extra.items() if k != "description"})
    return out


def _identity(value: Any) -> Any:
    return value


@cache
def _converter(hint: Any) -> Callable[[Any], Any]:
    """How a checked JSON value of type ``hint`` becomes its typed value (made once per type:
    a manifest of thousands of files converts each of them)."""
    inner = _optional(hint)
    if inner is not None:
        conv = _converter(inner)
        return _identity if conv is _identity else lambda v: None if v is None else conv(v)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return lambda v: load(hint, v)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is tuple:
        item = _converter(args[0])
        return tuple if item is _identity else lambda v: tuple(map(item, v))
    if origin in (Mapping, dict):
        value = _converter(args[1])
        return dict if value is _identity else lambda v: {k: value(x) for k, x in v.items()}
    if hint is int:  # JSON Schema's integer includes 10.0; the typed value is an int all the same
        return int
    if hint is float:  # and a number may be written 530: a float all the same
        return float
    return _identity


@cache
def _loaders(cls: type) -> tuple[tuple[str, str, Callable[[Any], Any]], ...]:
    return tuple((f.name, f.key, _converter(f.hint)) for f in _fields(cls))


def load(cls: type[T], data: Mapping[str, Any]) -> T:
    """The typed value of ``data``, which has passed :func:`schema_of` ``(cls)`` (arrays become
    tuples, nested objects their records, an absent optional key ``None``)."""
    kind: type = cls  # (mypy: a type[T] is hashable, the cache's key)
    kwargs = {name: conv(data[key]) for name, key, conv in _loaders(kind) if key in data}
    if _is_open(kind):
        kwargs[RAW] = dict(data)
    return cls(**kwargs)


def _dump_value(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dump(value)
    if isinstance(value, tuple):
        return [_dump_value(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _dump_value(v) for k, v in value.items()}
    return value


def dump(record: Any) -> dict[str, Any]:
    """The JSON object of a record: an open one as it was read, a closed one field by field
    (an optional field that is ``None`` is left out, as it was absent)."""
    if _is_open(type(record)):
        return dict(getattr(record, RAW))
    out = {}
    kind: type = type(record)
    for f in _fields(kind):
        value = getattr(record, f.name)
        if value is None and not f.required:
            continue
        out[f.key] = _dump_value(value)
    return out


class Record:
    """The base of a record class: ``to_json`` is :func:`dump` (a record never writes JSON its
    own schema would refuse: it was loaded from JSON that passed it)."""

    def to_json(self) -> dict[str, Any]:
        return dump(self)


# ---- the check: fastjsonschema against the generated schema --------------------------------

#: the draft the generated schemas declare: what fastjsonschema implements (and jsonschema)
DRAFT = "http://json-schema.org/draft-07/schema#"


@cache
def checker(cls: type) -> Callable[[Any], Any]:
    """The validator of a record class's schema, compiled once per process. fastjsonschema,
    not jsonschema (which the tests hold it to): importing jsonschema costs 60 ms bare and
    seconds where its optional format checkers are installed (rfc3987-syntax builds a grammar
    on import), and it checks a 2 000-file manifest in 230 ms where fastjsonschema takes 15."""
    validate: Callable[[Any], Any] = fastjsonschema.compile({"$schema": DRAFT, **schema_of(cls)})
    return validate


def problem(validate: Callable[[Any], Any], data: Any) -> str | None:
    """What is wrong with ``data``, as one short line — where (a JSON path) and the rule it
    breaks — or ``None`` when it is valid."""
    try:
        validate(data)
    except JsonSchemaValueException as err:
        return _reason(err.name or "data", err.message, err.rule, err.definition)
    return None


def _reason(name: str, message: str, rule: str | None, definition: Any) -> str:
    # fastjsonschema names the place `data.files[0].size` and starts its message with it
    if message.startswith(name):
        message = message[len(name):].lstrip()
    described = definition.get("description") if isinstance(definition, Mapping) else None
    if rule in ("anyOf", "oneOf", "not", "pattern") and described:
        message = f"is not {described}"  # rather than "must match pattern ^(?!/)(?![\\s\\S]*…"
    path = " ".join(("$" + name[len("data"):]).split())  # a key is text from the file: newlines
    if len(path) > _MAX_PATH:
        path = path[:_MAX_PATH - 1] + "…"
    where = f"{path}: "
    message = " ".join(message.split())
    room = _MAX_REASON - len(where) - len(f" ({rule})")
    if len(message) > room:  # what was wrong is cut, never where or which rule
        message = message[:room - 1] + "…"
    return f"{where}{message} ({rule})"


__all__ = ["Record", "checker", "dump", "load", "problem", "rule", "schema_of"]
