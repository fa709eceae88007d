"""A contract as a frozen dataclass, validated on load (the auditwheel policy pattern).

Loaded from ``[platforms.NAME].contract`` in ``prebake.toml`` or from a standalone TOML file
(``--contract FILE``, either a bare table or ``[contract]``). Validation returns every problem
with its key path instead of stopping at the first.
"""

from __future__ import annotations

import difflib
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from prebake import abikeys
from prebake.abikeys import KNOWN_WASM_FEATURES, Value
from prebake.contract.licenses import pattern_problem
from prebake.contract.presets import PresetError, load_preset, merge
from prebake.errors import ConfigError, PrebakeError, Problem

__all__ = ["KNOWN_WASM_FEATURES", "ONLY_FOR_OS", "SETTINGS", "Contract",
           "load_contract_file", "os_problems", "parse_contract"]


@dataclass(frozen=True)
class Contract:
    """Every field is optional: ``None`` / empty means "no rule".

    One field per contract key of ``prebake.abikeys.KEYS``, in its order, generated from the
    table (which says how each is parsed and which oses it applies to; its rule is bound in
    ``prebake.contract.rules``): add a key there, then ``python -m prebake.reference``. A rule
    whose fact cannot be read fails (fail closed); ``allow_unknown`` names the keys for which
    the consumer accepts that instead, and the report still lists each one.
    """

    # ---- generated from prebake.abikeys.KEYS by `python -m prebake.reference` ----
    os: str | None = None
    arch: str | None = None
    eh: str | None = None
    wasm_eh_encoding: str | None = None
    lto: str | None = None
    glibc_max: str | None = None
    glibcxx_max: str | None = None
    cxx_stdlib: str | None = None
    macos_min: str | None = None
    msvc_runtime: str | None = None
    threads: bool | None = None
    exec_stack: bool | None = None
    features_required: tuple[str, ...] = ()
    features_forbidden: tuple[str, ...] = ()
    allowed_needed: tuple[str, ...] | None = None
    forbid_exports: tuple[str, ...] = ()
    allowed_licenses: tuple[str, ...] = ()
    allow_unknown: tuple[str, ...] = ()
    # ---- end of the generated fields ----

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            out[f.name] = list(v) if isinstance(v, tuple) else v
        return out


# keys that change how the rules are judged, not rules themselves
SETTINGS = tuple(k.name for k in abikeys.contract_keys() if k.setting)
# Keys whose facts only binaries of some oses have: on another os the key can never be checked,
# so a contract naming it is an error (a wasm asset has no glibc floor). Other keys apply to all.
ONLY_FOR_OS: Mapping[str, tuple[str, ...]] = {
    k.name: k.oses for k in abikeys.contract_keys() if k.oses}


def os_problems(contract: Contract, os: str, platform: str | None, where: str
                ) -> list[Problem]:
    """A problem per key of ``contract`` that does not apply to binaries of ``os``."""
    out = []
    owner = f"platform {platform!r} has os" if platform else "the contract's os is"
    for key, oses in ONLY_FOR_OS.items():
        value = getattr(contract, key)
        if value not in (None, ()) and os not in oses:
            out.append(Problem(f"{where}.{key}", f"applies only to os {', '.join(oses)}; "
                               f"{owner} {os!r}"))
    return out


def _is_version(s: str) -> bool:
    parts = s.split(".")
    return 1 <= len(parts) <= 4 and all(p.isdigit() for p in parts)


def _hint(value: str, names: tuple[str, ...] | list[str]) -> str:
    hint = difflib.get_close_matches(value, names, n=1)
    return f" (did you mean '{hint[0]}'?)" if hint else ""


def _parse_value(key: abikeys.AbiKey, value: Any, path: str) -> tuple[Any, list[Problem]]:
    """One key's value as the table's ``Value`` kind says, or the problems with it."""
    kind = key.value
    if kind is Value.CHOICE:
        choices = key.contract_choices
        if not isinstance(value, str) or value not in choices:
            return None, [Problem(path, f"must be one of {', '.join(choices)}; got {value!r}")]
        return value, []
    if kind is Value.VERSION:
        if not isinstance(value, str) or not _is_version(value):
            return None, [Problem(path, f"must be a version string like \"2.28\"; got {value!r}")]
        return value, []
    if kind is Value.BOOL:
        if not isinstance(value, bool):
            return None, [Problem(path, f"must be true or false; got {value!r}")]
        return value, []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return None, [Problem(path, "must be a list of strings")]
    problems = []
    if kind is Value.FEATURES:
        problems = [Problem(path, f"unknown wasm feature {v!r}{_hint(v, KNOWN_WASM_FEATURES)}")
                    for v in value if v not in KNOWN_WASM_FEATURES]
    elif kind is Value.KEYS:
        rules = [k.name for k in abikeys.contract_keys() if not k.setting]
        problems = [Problem(path, f"{v!r} is not a contract key{_hint(v, rules)}")
                    for v in value if v not in rules]
    return tuple(value), problems


def parse_contract(
    data: Mapping[str, Any], where: str = "contract"
) -> tuple[Contract, list[Problem]]:
    """Validate a mapping into a ``Contract``; problems name ``where.key`` and what is wrong.

    ``extends = "NAME"`` starts from the shipped preset ``NAME`` (``prebake.contract.presets``);
    the other keys of ``data`` override the preset's, each replacing its key whole.
    """
    problems: list[Problem] = []
    data = _with_preset(data, where, problems)
    names = [k.name for k in abikeys.contract_keys()]
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        path = f"{where}.{key}"
        if key not in names:
            problems.append(Problem(path, f"unknown contract key{_hint(key, names)}"))
            continue
        parsed, bad = _parse_value(abikeys.BY_NAME[key], value, path)
        problems += bad
        if parsed is not None:
            kwargs[key] = parsed
    problems += [Problem(f"{where}.allowed_licenses", why)
                 for pattern in kwargs.get("allowed_licenses", ())
                 if (why := pattern_problem(pattern)) is not None]
    both = set(kwargs.get("features_required", ())) & set(kwargs.get("features_forbidden", ()))
    if both:
        problems.append(
            Problem(where, f"features both required and forbidden: {', '.join(sorted(both))}")
        )
    return Contract(**kwargs), problems


def _with_preset(data: Mapping[str, Any], where: str, problems: list[Problem]
                 ) -> Mapping[str, Any]:
    if "extends" not in data:
        return data

    rest = {k: v for k, v in data.items() if k != "extends"}
    name = data["extends"]
    if not isinstance(name, str):
        problems.append(Problem(f"{where}.extends", f"must be a preset name; got {name!r}"))
        return rest
    try:
        return merge(load_preset(name), rest)
    except PresetError as exc:
        problems.append(Problem(f"{where}.extends", str(exc)))
        return rest


def load_contract_file(path: Path) -> Contract:
    """A standalone contract (``--contract FILE``): a bare table or a ``[contract]`` table.

    Raises ``ConfigError`` naming every problem, or ``PrebakeError`` when the file is not TOML.
    """
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PrebakeError(f"{p}: cannot read contract: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise PrebakeError(f"{p}: not valid TOML: {exc}") from None
    where = "contract"
    if set(data) == {"contract"} and isinstance(data["contract"], dict):
        data = data["contract"]
    else:
        where = "(top level)"
    contract, problems = parse_contract(data, where)
    if contract.os is not None:  # a file that names its os gets the per-os rule too
        problems += os_problems(contract, contract.os, None, where)
    if problems:
        raise ConfigError(str(p), problems)
    return contract
