"""The frozen values one unit's steps pass on (``prebake.bake.unit``): each step takes the
previous step's value and returns its own, so a new step goes between two others without
reaching into shared state."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prebake.bake.guards import GuardReport
from prebake.bake.stamp import Snapshot
from prebake.manifest import Manifest
from prebake.model.recipe import Recipe, Strategy
from prebake.package.adopt import Adopted
from prebake.trust.hooks import UnitTrust


@dataclass(frozen=True)
class Composed:
    """The unit's prefix (and ``deps``) filled with the earlier stages' files, and what those
    files were before any recipe ran (the immutability guard compares against it)."""

    before: Snapshot


@dataclass(frozen=True)
class RecipeBuilt:
    """One recipe's outputs are in the prefix (built, or repackaged from upstream)."""

    recipe: Recipe
    strategy: Strategy
    work: Path
    before: frozenset[str] = frozenset()  # the prefix's files before it built (not its own)
    installed: frozenset[str] = frozenset()  # the files the recipe added to the prefix


@dataclass(frozen=True)
class RecipeGuarded:
    """One recipe's outputs passed every guard; ``outcome`` holds what the guards found."""

    recipe: Recipe
    strategy: Strategy
    outcome: GuardReport
    adopted: Adopted | None = None  # the version proof and the install's CMake packages


@dataclass(frozen=True)
class Guarded:
    """Every recipe passed its guards and no earlier stage's file changed; ``added`` are the
    files the unit added to a shared prefix (what a stage unit ships)."""

    recipes: tuple[RecipeGuarded, ...]
    added: tuple[str, ...]


@dataclass(frozen=True)
class Packaged:
    """The asset and its ``.sha256``/``.json`` sidecars written in the unit's dist folder."""

    path: Path
    sha256: str
    manifest: Manifest
    trust: UnitTrust


@dataclass(frozen=True)
class Attested:
    """The asset plus its provenance statement (``<asset>.intoto.json``)."""

    packaged: Packaged
    statement: Path


@dataclass(frozen=True)
class Published:
    """What the unit's last step did: the asset (published unless ``--no-publish``) and, with
    ``--diff``, its diff against the store's current asset."""

    path: Path
    sha256: str
    diff: Mapping[str, Any] | None = None
    diff_markdown: str = ""
    deferred: bool = False  # --diff: published once every unit's diff is known (bake.build)
