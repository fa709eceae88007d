"""Where a workspace's build state lives (``<root>/.prebake``), and one unit's folders in it."""

from __future__ import annotations

import itertools
import os
import shutil
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from prebake.model.recipe import Recipe
from prebake.plan.units import Unit


def slug(unit_id: str) -> str:
    return unit_id.replace("/", "--")


class Layout:
    """The ``.prebake`` folder: work trees, saved stage files, logs, finished assets and the
    blocks they were compressed into."""

    def __init__(self, root: Path) -> None:
        self.base = root / ".prebake"

    def work(self, platform: str, name: str) -> Path:
        return self.base / "work" / platform / name

    def stage_files(self, platform: str, stage: str) -> Path:
        """The files a stage added to the prefix (what its asset ships)."""
        return self.base / "stages" / platform / stage

    def log(self, unit_id: str) -> Path:
        return self.base / "logs" / f"{slug(unit_id)}.log"

    def timing(self, unit_id: str) -> Path:
        """How long the unit's last successful build took, for the next one's estimate
        (``prebake.bake.progress``), beside its log."""
        return self.base / "logs" / f"{slug(unit_id)}.timing.json"

    def dist(self, platform: str) -> Path:
        return self.base / "dist" / platform

    def blocks(self, unit_id: str) -> Path:
        """The unit's compressed xz blocks, for its next build (``prebake.package.blocks``)."""
        return self.base / "blocks" / slug(unit_id)


@dataclass(frozen=True)
class WorkDirs:
    """One unit's folders, named once.

    A stage unit installs into ``prefix``, which starts as the union of the earlier stages'
    files (``deps`` is the same folder); a per-recipe unit installs into its own empty
    ``prefix`` and builds against a copy of the earlier stages' files in ``deps``. Either way
    ``deps`` is the tree whose earlier files must come out unchanged.
    """

    root: Path
    prefix: Path
    deps: Path
    dist: Path  # where the finished asset and its sidecars are written

    def recipe(self, recipe: Recipe) -> Path:
        """A recipe's sources, build folder and link-test scratch space."""
        return self.root / recipe.name

    @property
    def shared_prefix(self) -> bool:
        return self.deps == self.prefix


def work_dirs(layout: Layout, unit: Unit) -> WorkDirs:
    p = unit.platform.name
    if unit.recipe is not None:
        root = layout.work(p, f"{unit.stage.name}-{unit.recipe}")
        return WorkDirs(root, root / "prefix", root / "deps", layout.dist(p))
    root = layout.work(p, unit.stage.name)
    return WorkDirs(root, root / "prefix", root / "prefix", layout.dist(p))


def stage_marker(stage_files: Path) -> Path:
    """Records which input hash a stage's saved files were built from."""
    return stage_files.with_name(stage_files.name + ".input_hash")


_discarded = itertools.count()


class Discarded:
    """An earlier build's folder, moved aside, and what a killed run left of earlier ones: to
    be deleted on a thread when :meth:`delete` is first called. The unit calls it once its
    sources are in place: deleting onnxruntime's old tree (35 000 files) beside the unpack
    slowed the unpack's file creation (1.6 s to 2.1 s for the main archive, more for the
    dependencies after it), while the configure that follows leaves a core and the disk idle."""

    def __init__(self, paths: Sequence[Path], name: str, moved: Path | None = None) -> None:
        self.paths = tuple(paths)
        self._name = name
        self._started = False
        # the earlier build's folder as it was left (its sources may be kept:
        # prebake.sources.reuse); None when there was none
        self.moved = moved

    def delete(self) -> None:
        """Start the deletion (once; later calls do nothing). The process waits for it at exit
        (a non-daemon thread), so a finished build leaves none behind."""
        if self._started or not self.paths:
            return
        self._started = True

        def run() -> None:
            for path in self.paths:
                shutil.rmtree(path, ignore_errors=True)

        threading.Thread(target=run, name=f"discard {self._name}").start()


def discard(folder: Path) -> Discarded:
    """Move an earlier build's folder aside at once (the new build makes it afresh), to be
    deleted later (:class:`Discarded`): onnxruntime's 1.6 GB tree took 10 s of a warm
    rebuild's start. A deletion that a killed process left half done
    (``.NAME.discarded-*``) goes with the next one."""
    if not folder.exists():
        return Discarded((), folder.name)
    trash = folder.with_name(f".{folder.name}.discarded-{os.getpid()}-{next(_discarded)}")
    folder.rename(trash)
    leftovers = [p for p in folder.parent.glob(f".{folder.name}.discarded-*") if p != trash]
    return Discarded((trash, *leftovers), folder.name, moved=trash)
