"""Type-check a loaded recipe against the dataclass annotations of the Recipe API.

A recipe is Python, so nothing stops ``Outputs(libs={"*": "lib/libzstd.a"})`` — a string where a
tuple of paths is expected — and a string iterates as its characters: unchecked, it fails after
the build with ``declared outputs missing: l, i, b, …``. The annotations of ``prebake.recipes``
are the one statement of each field's type; this walks a recipe's values against them when the
recipe is loaded, so the error names the field and the file before any work starts.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from prebake.errors import Problem

_SKIP = {"path"}  # set by the loader, not by the recipe author


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def describe_type(tp: Any) -> str:
    """``tuple[str, ...]`` -> ``a tuple of strings`` (how messages and the reference say it)."""
    origin, args = get_origin(tp), get_args(tp)
    simple = {str: "a string", int: "an integer", bool: "true/false", float: "a number",
              type(None): "None", Path: "a path", Any: "anything"}
    if tp in simple:
        return simple[tp]
    if origin in (Union, types.UnionType):
        return " or ".join(describe_type(a) for a in args)
    if origin is tuple:
        inner = describe_type(args[0]) if args else "values"
        return f"a tuple of {_plural(inner)}"
    if origin in (Mapping, dict) or tp in (Mapping, dict):
        if len(args) == 2:
            key, value = (_plural(describe_type(a)) for a in args)
            return f"a mapping of {key} to {value}"
        return "a mapping"
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if isinstance(tp, type):
        return f"{'an' if tp.__name__[:1] in 'AEIOU' else 'a'} {tp.__name__}"
    return str(tp)


def _plural(text: str) -> str:
    for one, many in (("a string", "strings"), ("an integer", "integers"),
                      ("a tuple of strings", "tuples of strings")):
        if text == one:
            return many
    return text


def _got(value: Any) -> str:
    kinds = {str: "a string", bool: "a boolean", int: "an integer", float: "a number",
             list: "a list", tuple: "a tuple", dict: "a dict", type(None): "None"}
    name = kinds.get(type(value), f"a {type(value).__name__}")
    return f"{name} ({value!r})"[:120] if not dataclasses.is_dataclass(value) else name


def type_problems(value: Any, tp: Any, where: str) -> list[Problem]:
    """Every place in ``value`` that does not have type ``tp``, each with its field path."""
    origin, args = get_origin(tp), get_args(tp)
    if tp is Any:
        return []
    if origin in (Union, types.UnionType):
        for alt in args:  # a dataclass value is checked field by field against its own class
            if isinstance(alt, type) and dataclasses.is_dataclass(alt) and isinstance(value, alt):
                return type_problems(value, alt, where)
        if any(not type_problems(value, alt, where) for alt in args):
            return []
        return [Problem(where, f"must be {describe_type(tp)}; got {_got(value)}")]
    if origin is Literal:
        ok = value in args and all(type(value) is type(a) for a in args if a == value)
        return [] if ok else [Problem(where, f"must be {describe_type(tp)}; got {_got(value)}")]
    if origin is tuple:
        if not isinstance(value, tuple):
            return [Problem(where, f"must be {describe_type(tp)}; got {_got(value)}")]
        inner = args[0] if args else Any
        return [p for i, v in enumerate(value) for p in type_problems(v, inner, f"{where}[{i}]")]
    if origin in (Mapping, dict) or tp in (Mapping, dict):
        if not isinstance(value, Mapping):
            return [Problem(where, f"must be {describe_type(tp)}; got {_got(value)}")]
        kt, vt = args if len(args) == 2 else (Any, Any)
        out = []
        for k, v in value.items():
            out += type_problems(k, kt, f"{where} key {k!r}")
            out += type_problems(v, vt, f"{where}[{k!r}]")
        return out
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(value, tp):
            return [Problem(where, f"must be {describe_type(tp)}; got {_got(value)}")]
        hints = _hints(tp)
        return [p for f in dataclasses.fields(tp) if f.name not in _SKIP
                for p in type_problems(getattr(value, f.name), hints[f.name],
                                       f"{where}.{f.name}")]
    if tp is int and isinstance(value, bool):
        return [Problem(where, f"must be {describe_type(tp)}; got {_got(value)}")]
    if isinstance(tp, type) and not isinstance(value, tp):
        return [Problem(where, f"must be {describe_type(tp)}; got {_got(value)}")]
    return []
