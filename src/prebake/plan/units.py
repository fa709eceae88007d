"""Units and plans: what will be built, in which order, and what identifies each result.

A :class:`Unit` is made once, by the planner, and carries everything resolved: the workspace's
``Platform`` and ``Stage``, the ``Recipe`` objects it builds, the units it builds upon, its
input hash and its release asset. The builder, the CI generator, ``plan`` and trust read it as
is, so nothing downstream looks a name up again or re-plans.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from prebake.model.recipe import Recipe
from prebake.model.workspace import PackageMode, Platform, Stage
from prebake.package.naming import AssetId


@dataclass(frozen=True, eq=False)
class Unit:
    """One (recipe or stage) × platform.

    ``id`` is ``"<stage>/<platform>"`` for a stage packaged as one prefix, ``"<recipe>/<platform>"``
    in a ``per-recipe`` stage. ``inputs`` are the named digests/values the ``input_hash`` is made
    of; ``recipe_inputs`` the same per recipe it builds (for ``--explain``). ``deps`` are the unit
    ids that must be built first. ``upstream`` are the units, on the same platform, of every stage
    this unit's stage comes after (directly or not): the files of their ``prefix`` units make up
    the prefix it builds against, and their input hashes say which stored assets may stand in.
    """

    id: str
    stage: Stage
    platform: Platform
    recipes: tuple[Recipe, ...]
    input_hash: str
    inputs: Mapping[str, str]
    deps: tuple[str, ...]
    asset: AssetId
    upstream: tuple[Unit, ...] = ()
    recipe_inputs: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # per recipe, the digests of what can change its build, not its guards (``build_inputs``):
    # what a build stamp records for ``build --guards-only``
    build_inputs: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # source URLs of ``recipes`` with no digest in prebake.sources.lock (the build refuses)
    unlocked: tuple[str, ...] = ()

    @property
    def package(self) -> PackageMode:
        return self.stage.package

    @property
    def per_recipe(self) -> bool:
        return self.stage.package == "per-recipe"

    @property
    def recipe(self) -> str | None:
        """The name of a ``per-recipe`` unit's one recipe; ``None`` for a stage unit."""
        return self.recipes[0].name if self.per_recipe else None

    @property
    def short_hash(self) -> str:
        return self.input_hash[:12]

    def upstream_unit(self, stage: str) -> Unit | None:
        """The ``prefix`` unit of an earlier stage (``None``: the stage ships per recipe)."""
        return next((u for u in self.upstream
                     if u.stage.name == stage and u.package == "prefix"), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "stage": self.stage.name,
            "recipe": self.recipe,
            "recipes": [r.name for r in self.recipes],
            "platform": self.platform.name,
            "package": self.package,
            "input_hash": self.input_hash,
            "inputs": dict(self.inputs),
            "deps": list(self.deps),
            "asset": self.asset.filename,
        }


def asset_for(unit: Unit) -> AssetId:
    """The release asset a unit produces (the build and the store lookup both use this)."""
    return unit.asset


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
