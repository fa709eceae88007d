"""The CI defaults, read from ``defaults.toml`` beside this module (data, not code)."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

DEFAULTS_FILE = Path(__file__).resolve().parent / "defaults.toml"


@dataclass(frozen=True)
class CiDefaults:
    python: str
    timeout_minutes: int
    default_branch: str
    install: str
    runner: str
    actions: Mapping[str, str]


@cache
def ci_defaults() -> CiDefaults:
    data = tomllib.loads(DEFAULTS_FILE.read_text(encoding="utf-8"))
    return CiDefaults(str(data["python"]), int(data["timeout_minutes"]),
                      str(data["default_branch"]), str(data["install"]), str(data["runner"]),
                      {str(k): str(v) for k, v in data["actions"].items()})
