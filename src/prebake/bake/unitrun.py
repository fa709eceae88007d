"""What every step of one unit reads (:class:`UnitRun`) and how a step refuses
(:class:`UnitFailed`); the steps themselves are :mod:`prebake.bake.unit`'s."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from prebake.bake.buildenv import BuildEnv
from prebake.bake.layout import Layout, WorkDirs
from prebake.bake.options import Options
from prebake.bake.process import BuildLog
from prebake.bake.progress import Tracker
from prebake.model.recipe import Recipe
from prebake.model.workspace import Workspace
from prebake.plan.units import Unit
from prebake.sources import SourceCache
from prebake.store.base import Store

if TYPE_CHECKING:
    from prebake.contract.findings import Violation

Event = Callable[[str, str, str], None]  # (unit id, state, message)


class UnitFailed(Exception):
    """A unit failed: ``UnitFailed(message)``, or ``UnitFailed(message, violations)`` for a
    failed guard. The message names what, the log holds the details; ``violations`` are the
    contract findings behind a failed guard, for ``--json`` and the table."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""

    @property
    def violations(self) -> tuple[Violation, ...]:
        return tuple(self.args[1]) if len(self.args) > 1 else ()


@dataclass(frozen=True)
class UnitRun:
    """What every step of one unit reads: fixed for the unit's run, never written by a step
    (``env``: the unit's build environment, made once before the first step)."""

    ws: Workspace
    unit: Unit
    opts: Options
    store: Store
    dirs: WorkDirs
    env: BuildEnv
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
