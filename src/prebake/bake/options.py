"""How ``prebake build`` runs: the command line's choices every unit's steps read."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from prebake.bake.core_budget import CoreBudget
from prebake.bake.progress import Status
from prebake.sources import SourceCache


@dataclass
class Options:
    jobs: int = 1  # parallel units
    force: bool = False
    dry_run: bool = False
    caller_env: Mapping[str, str] = field(default_factory=dict)
    cache: SourceCache | None = None
    publish: bool = True
    diff: bool = False  # diff each new asset against the store's current one, before publishing
    allow_breaking: bool = False  # with diff: publish even when the diff is breaking
    guards_only: bool = False  # re-run the guards on the stamped build tree, build nothing
    # a display's: how far a running unit's commands are (unit id, its status)
    progress: Callable[[str, Status], None] | None = None

    # the cores, shared by the units running at the moment a command starts (``{jobs}``)
    cores: CoreBudget = field(default_factory=CoreBudget)
