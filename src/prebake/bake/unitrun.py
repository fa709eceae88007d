"""What every step of one unit reads (:class:`UnitRun`) and how a step refuses
(:class:`UnitFailed`); the steps themselves are :mod:`prebake.bake.unit`'s."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from prebake.bake.layout import Layout, WorkDirs
from prebake.bake.options import Options
from prebake.bake.process import BuildLog
from prebake.bake.progress import Tracker
from prebake.plan.model import Unit
from prebake.recipes.model import Recipe, Strategy
from prebake.sources import SourceCache
from prebake.store.base import Store
from prebake.workspace.model import Workspace

if TYPE_CHECKING:
    from prebake.contract.findings import Violation

Event = Callable[[str, str, str], None]  # (unit id, state, message)


class UnitFailed(Exception):
    """A unit failed: the message names what, the log holds the details; ``violations`` are
    the contract findings behind a failed guard, for ``--json`` and the table."""

    def __init__(self, message: str, violations: Sequence[Violation] = ()) -> None:
        super().__init__(message)
        self.violations = tuple(violations)


@dataclass(frozen=True)
class UnitRun:
    """What every step of one unit reads: fixed for the unit's run, never written by a step."""

    ws: Workspace
    unit: Unit
    opts: Options
    store: Store
    dirs: WorkDirs
    layout: Layout
    log: BuildLog
    cache: SourceCache
    cancel: threading.Event
    emit: Event
    started_on: float  # wall clock, for the provenance statement only
    t0: float  # monotonic, for the log's timestamps
    # the commands' output lines counted, and the estimate from the unit's last build
    progress: Tracker = field(default_factory=lambda: Tracker(None))

    def say(self, msg: str) -> None:
        self.emit(self.unit.id, "running", msg)
        self.log.write(f"## [{time.monotonic() - self.t0:6.1f}s] {msg}")

    def version(self, recipe: Recipe) -> str:
        return self.ws.pins[recipe.pin]


def unbuildable(recipe: Recipe, platform: str) -> str | None:
    """Why a recipe can never build here (no strategy), else ``None``."""
    return _no_strategy(recipe, platform) if recipe.strategy_for(platform) is None else None


def _no_strategy(recipe: Recipe, platform: str) -> str:
    return f"recipe {recipe.name} has no strategy for {platform}"


def strategy_of(run: UnitRun, recipe: Recipe) -> Strategy:
    """The recipe's strategy for the unit's platform (preflight refused a unit without one)."""
    strategy = recipe.strategy_for(run.unit.platform.name)
    if strategy is None:
        raise UnitFailed(_no_strategy(recipe, run.unit.platform.name))
    return strategy

