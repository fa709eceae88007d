"""Which legs a CI run builds: the ``stages`` and ``platforms`` inputs of a manual run.

A release engineer re-runs a subset of the workflow (a runner pool is down, one platform
failed) with ``workflow_dispatch``'s two inputs, comma-separated; empty means all, which is
also what every push and pull request gets. The plan job checks the names against the workspace
(a name it does not know fails the run before any leg starts) and hands the selection to the
legs' job-level ``if:`` as JSON lists.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from prebake.errors import PrebakeError
from prebake.workspace.model import Workspace


@dataclass(frozen=True)
class Selection:
    stages: tuple[str, ...]  # in build order
    platforms: tuple[str, ...]  # in the workspace's order
    everything: bool  # both inputs were empty: the run builds every leg, as a push does

    def outputs(self) -> dict[str, str]:
        """The plan job's outputs the legs' ``if:`` read with ``fromJSON``."""
        return {"stages": json.dumps(list(self.stages), separators=(",", ":")),
                "platforms": json.dumps(list(self.platforms), separators=(",", ":"))}


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
