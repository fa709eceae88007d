"""Several consumers that end up in one process (addons of one host) must agree on each
dependency: one version per dependency, and one asset (sha256) per dependency and platform.
Two addons linking different onnxruntime builds into one process is the bug this prevents."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prebake.consume.consumer_lock import read_lock


@dataclass(frozen=True)
class Disagreement:
    name: str
    what: str  # "version" | "sha256"
    platform: str | None
    values: dict[str, list[str]]  # value -> lock files that hold it
    # value -> (lock file, platform) pairs: one lock may hold a dependency at two versions for
    # two platforms, so the lock alone does not say which side is which
    where: dict[str, list[tuple[str, str]]] = field(default_factory=dict)

    def _side(self, value: str) -> str:
        pairs = self.where.get(value)
        if not pairs:
            return ", ".join(self.values[value])
        by_lock: dict[str, list[str]] = defaultdict(list)
        for lock, platform in pairs:
            by_lock[lock].append(platform)
        return ", ".join(f"{lock} ({', '.join(sorted(set(ps)))})"
                         for lock, ps in sorted(by_lock.items()))

    def render(self) -> str:
        where = f" ({self.platform})" if self.platform else ""
        parts = "; ".join(f"{v} in {self._side(v)}" for v in sorted(self.values))
        return f"{self.name}{where}: {self.what} differs: {parts}"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "what": self.what, "platform": self.platform,
                "values": {k: list(v) for k, v in sorted(self.values.items())},
                "where": {k: [{"lock": lock, "platform": p} for lock, p in sorted(v)]
                          for k, v in sorted(self.where.items())}}


def agree(locks: Sequence[Path]) -> list[Disagreement]:
    """Every disagreement among ``locks`` (empty: they agree). Malformed locks raise."""
    versions: dict[str, dict[str, set[tuple[str, str]]]] = defaultdict(
        lambda: defaultdict(set))
    digests: dict[tuple[str, str, str], dict[str, set[tuple[str, str]]]] = defaultdict(
        lambda: defaultdict(set))
    for path in locks:
        for e in read_lock(Path(path), must_exist=True).entries.values():
            versions[e.name][e.version].add((str(path), e.platform))
            digests[(e.name, e.version, e.platform)][e.sha256].add((str(path), e.platform))
    out: list[Disagreement] = []
    for name in sorted(versions):
        if len(versions[name]) > 1:
            out.append(_disagreement(name, "version", None, versions[name]))
    for (name, _version, platform), by_sha in sorted(digests.items()):
        if len(by_sha) > 1:
            out.append(_disagreement(name, "sha256", platform, by_sha))
    return out


def _disagreement(name: str, what: str, platform: str | None,
                  held: dict[str, set[tuple[str, str]]]) -> Disagreement:
    return Disagreement(name, what, platform,
                        {v: sorted({lock for lock, _p in pairs}) for v, pairs in held.items()},
                        {v: sorted(pairs) for v, pairs in held.items()})
