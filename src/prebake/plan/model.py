"""Units and plans: what will be built, in which order, and what identifies each result."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from prebake.package.naming import AssetId, asset_id
from prebake.workspace.model import PackageMode


@dataclass(frozen=True)
class Unit:
    """One (recipe or stage) × platform.

    ``id`` is ``"<stage>/<platform>"`` for a stage packaged as one prefix, ``"<recipe>/<platform>"``
    in a ``per-recipe`` stage. ``inputs`` are the named digests/values the ``input_hash`` is made
    of; ``recipe_inputs`` the same per recipe it builds (for ``--explain``). ``deps`` are the unit
    ids that must be built first. ``asset_name``/``version`` name its release asset.
    """

    id: str
    stage: str
    recipe: str | None
    platform: str
    input_hash: str
    inputs: Mapping[str, str]
    deps: tuple[str, ...]
    recipes: tuple[str, ...]
    package: PackageMode
    asset_name: str
    version: str
    recipe_inputs: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    @property
    def short_hash(self) -> str:
        return self.input_hash[:12]

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "stage": self.stage,
            "recipe": self.recipe,
            "recipes": list(self.recipes),
            "platform": self.platform,
            "package": self.package,
            "input_hash": self.input_hash,
            "inputs": dict(self.inputs),
            "deps": list(self.deps),
            "asset": asset_for(self).filename,
        }


def asset_for(unit: Unit) -> AssetId:
    """The release asset a unit produces (the build and the store lookup both use this)."""
    return asset_id(unit.asset_name, unit.version, unit.platform)


@dataclass(frozen=True)
class Plan:
    """Units in build order (every unit after its ``deps`` that are in the plan)."""

    units: tuple[Unit, ...]
    stages: tuple[str, ...]
    platforms: tuple[str, ...]

    def unit(self, unit_id: str) -> Unit | None:
        return next((u for u in self.units if u.id == unit_id), None)

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(u.id for u in self.units)
