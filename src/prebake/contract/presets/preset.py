"""Contract presets: named consumer profiles shipped as data (auditwheel's policy JSON idea).

Each ``NAME.toml`` beside this module holds a ``description``, the ``os`` it is for, an
optional ``extends`` (another preset) and a ``[contract]`` table. A platform's contract names
one with ``extends = "NAME"`` and adds or overrides keys: an override replaces the preset's
value whole (a list is replaced, not merged), so what a workspace writes is what it gets.
Presets are policy, not code: adding a profile is adding a file.
"""

from __future__ import annotations

import difflib
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

PRESETS_DIR = Path(__file__).resolve().parent
_MAX_DEPTH = 8  # extends chains are short; a loop is a bug in the shipped data


@dataclass(frozen=True)
class Preset:
    """One shipped profile, with ``contract`` already merged over what it ``extends``."""

    name: str
    description: str
    os: str
    contract: Mapping[str, Any]
    extends: str | None = None


class PresetError(ValueError):
    """An unknown preset name (the message carries the "did you mean")."""


def preset_names() -> list[str]:
    return sorted(p.stem for p in PRESETS_DIR.glob("*.toml"))


def _raw(name: str) -> dict[str, Any]:
    path = PRESETS_DIR / f"{name}.toml"
    if name not in preset_names():
        close = difflib.get_close_matches(name, preset_names(), n=1, cutoff=0.5)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise PresetError(f"unknown contract preset {name!r}{hint}; shipped presets: "
                          + ", ".join(preset_names()))
    return tomllib.loads(path.read_text(encoding="utf-8"))


@cache
def load_preset(name: str) -> Preset:
    """The preset ``name`` with its ``extends`` chain resolved, or ``PresetError``."""
    chain: list[str] = []
    contract: dict[str, Any] = {}
    current: str | None = name
    first: dict[str, Any] | None = None
    while current is not None:
        if current in chain or len(chain) >= _MAX_DEPTH:
            raise PresetError(f"contract preset {name!r}: extends loops: "
                              + " -> ".join([*chain, current]))
        chain.append(current)
        data = _raw(current)
        first = first if first is not None else data
        contract = {**dict(data.get("contract", {})), **contract}
        current = data.get("extends")
    assert first is not None
    return Preset(name, str(first.get("description", "")), str(first["os"]),
                  {"os": first["os"], **contract}, first.get("extends"))


def merge(preset: Preset, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The contract a platform gets: the preset's keys, each override replacing its key whole."""
    return {**preset.contract, **overrides}
