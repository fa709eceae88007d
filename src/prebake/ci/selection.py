"""Which legs a CI run builds: the manual run's selection, less what the store already holds.

A release engineer re-runs a subset of the workflow (a runner pool is down, one platform
failed) with ``workflow_dispatch``'s two inputs, comma-separated; empty means all, which is
also what every push and pull request gets. The plan job checks the names against the workspace
(a name it does not know fails the run before any leg starts), looks every unit of the
selection up in the store by its input hash, and hands the legs that still have a unit to build
(``stage/platform``) to the legs' job-level ``if:`` as one JSON list, the run's matrix: a leg
whose every asset the store holds starts no runner, and an empty list starts none (the publish
jobs, which need a leg that built, are skipped with them; nothing fails).

The plan job measures each platform's toolchain with its own runner, as ``prebake plan``
would: where that runner lacks a leg's toolchain (a cross compiler the leg installs, a macOS
runner's Xcode) the hash it computes matches nothing and the leg runs, its own hash-skip
deciding there; a leg is left out only when the plan job's hash of each of its units is the
one the stored asset's manifest records.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from prebake.errors import PrebakeError
from prebake.model.workspace import Workspace
from prebake.plan.units import Plan


@dataclass(frozen=True)
class Selection:
    stages: tuple[str, ...]  # in build order
    platforms: tuple[str, ...]  # in the workspace's order
    everything: bool  # both inputs were empty: the run builds every leg, as a push does

    def legs(self, plan: Plan, statuses: Mapping[str, str]) -> tuple[str, ...]:
        """The selected legs (``stage/platform``, build order) with a unit the store does not
        hold built from its current inputs (``statuses``: unit -> ``plan_statuses``')."""
        out = []
        for stage in self.stages:
            for platform in self.platforms:
                units = [u.id for u in plan.units
                         if u.stage.name == stage and u.platform.name == platform]
                if units and any(statuses.get(u) != "built" for u in units):
                    out.append(f"{stage}/{platform}")
        return tuple(out)


def outputs(release: str | None, legs: Iterable[str]) -> dict[str, str]:
    """The plan job's outputs: the release it publishes to ("" for none) and the legs to build,
    the JSON list each leg's ``if:`` reads with ``fromJSON``."""
    return {"release": release or "", "legs": json.dumps(list(legs), separators=(",", ":"))}


MAX_INPUT = 4096  # a dispatch input is typed by a person; a longer one is not a list of names


def _names(text: str, what: str) -> list[str]:
    if len(text) > MAX_INPUT:
        raise PrebakeError(f"input {what}: {len(text)} characters (at most {MAX_INPUT})")
    return [name.strip() for name in text.split(",") if name.strip()]


def _wanted(text: str, what: str, expand: Callable[[str], Iterable[str]]) -> set[str]:
    """Every name the input's names (or aliases) stand for; an unknown one is one line."""
    out: set[str] = set()
    for name in _names(text, what):
        try:
            out.update(expand(name))
        except PrebakeError as e:
            raise PrebakeError(f"input {what}: {e}") from None
    return out


def select(ws: Workspace, stages: str = "", platforms: str = "") -> Selection:
    """The legs a run builds; refuses (one line naming the input and the name) what the
    workspace does not know. A stage input may name an alias (``full``)."""
    wanted_stages = _wanted(stages, "stages", ws.stage_names)
    wanted_platforms = _wanted(platforms, "platforms", ws.platform_names)
    order = ws.stage_names()
    return Selection(
        stages=tuple(s for s in order if not wanted_stages or s in wanted_stages),
        platforms=tuple(p for p in ws.platforms if not wanted_platforms or p in wanted_platforms),
        everything=not wanted_stages and not wanted_platforms)
