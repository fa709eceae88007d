"""Several consumers that end up in one process (addons of one host) must agree on each
dependency: one version per dependency, and one asset (sha256) per dependency and platform.
Two addons linking different onnxruntime builds into one process is the bug this prevents."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prebake.consume.lock import read_lock


@dataclass(frozen=True)
class Disagreement:
    name: str
    what: str  # "version" | "sha256"
    platform: str | None
    values: dict[str, list[str]]  # value -> lock files that hold it

    def render(self) -> str:
        where = f" ({self.platform})" if self.platform else ""
        parts = "; ".join(f"{v} in {', '.join(files)}" for v, files in sorted(self.values.items()))
        return f"{self.name}{where}: {self.what} differs: {parts}"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "what": self.what, "platform": self.platform,
                "values": {k: list(v) for k, v in sorted(self.values.items())}}


def agree(locks: Sequence[Path]) -> list[Disagreement]:
    """Every disagreement among ``locks`` (empty: they agree). Malformed locks raise."""
    versions: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    digests: dict[tuple[str, str, str], dict[str, set[str]]] = defaultdict(
        lambda: defaultdict(set))
    for path in locks:
        for e in read_lock(Path(path), must_exist=True).entries.values():
            versions[e.name][e.version].add(str(path))
            digests[(e.name, e.version, e.platform)][e.sha256].add(str(path))
    out: list[Disagreement] = []
    for name in sorted(versions):
        if len(versions[name]) > 1:
            out.append(Disagreement(name, "version", None,
                                    {v: sorted(f) for v, f in versions[name].items()}))
    for (name, _version, platform), by_sha in sorted(digests.items()):
        if len(by_sha) > 1:
            out.append(Disagreement(name, "sha256", platform,
                                    {s: sorted(f) for s, f in by_sha.items()}))
    return out
