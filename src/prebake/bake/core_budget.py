"""The machine's cores, shared by the units that are running now — not a fixed share of ``-j``.

``{jobs}`` in a recipe command is read from this budget when the command starts: a unit that
runs alone gets every core even under ``-j 2``, two running units get half each, and when one
finishes, the next command of the other gets them all again. The scheduler (``prebake.bake``)
says when a unit starts and finishes; ``{jobs}`` is the only consumer.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping

from prebake.cores import usable_cores

__all__ = ["CoreBudget", "LiveValues", "usable_cores"]


class CoreBudget:
    """Cores divided among running units, in the order they started (the first ones get the
    remainder: 3 cores for 2 units are 2 + 1)."""

    def __init__(self, cores: int | None = None) -> None:
        self.cores = max(1, cores if cores is not None else usable_cores())
        self._running: list[str] = []
        self._lock = threading.Lock()

    def start(self, unit: str) -> None:
        with self._lock:
            self._running.append(unit)

    def finish(self, unit: str) -> None:
        with self._lock:
            if unit in self._running:
                self._running.remove(unit)

    def share(self, unit: str) -> int:
        """The cores ``unit`` may use now (all of them when nothing else runs)."""
        with self._lock:
            n = len(self._running)
            rank = self._running.index(unit) if unit in self._running else n
            n = max(1, n if unit in self._running else n + 1)
        base, extra = divmod(self.cores, n)
        return max(1, base + (1 if rank < extra else 0))


class LiveValues(Mapping[str, str]):
    """Placeholder values where some are read when a command is expanded (``{jobs}``)."""

    def __init__(self, fixed: Mapping[str, str], live: Mapping[str, Callable[[], object]]
                 ) -> None:
        self._fixed = dict(fixed)
        self._live = dict(live)

    def __getitem__(self, key: str) -> str:
        if key in self._live:
            return str(self._live[key]())
        return self._fixed[key]

    def __iter__(self) -> Iterator[str]:
        return iter({**self._fixed, **self._live})

    def __len__(self) -> int:
        return len({**self._fixed, **self._live})
