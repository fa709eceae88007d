"""Build stamps: what a unit's build tree on disk was built from, for ``build --guards-only``.

After a recipe's build step the builder writes ``<unit work>/stamps/<recipe>.json``: the named
digests of every *non-guard* input of the build (the recipe's strategy — commands, env,
downloads, layout —, its sources, declared files, pins, the toolchain's measured identity, the
platform's build profile, the earlier units it builds on) plus the prefix's files before it
built and a digest of every file it added. Guard inputs are left out on purpose: the
platform's ``link_test``, the contract, and the recipe's ``Outputs``/``Snippet`` may change
between a failed run and ``--guards-only``, which re-runs only the guards.

``--guards-only`` refuses when a stamp is missing, names another input than the workspace now
asks for, or a file the build added changed since: proving a stale or hand-edited tree would
lie about what the asset (published under the *current* input hash) was built from.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

from prebake.bake.immutability import Snapshot, snapshot
from prebake.bake.layout import WorkDirs
from prebake.plan.hashing import canonical_digest, platform_profile
from prebake.plan.units import Unit
from prebake.recipes.api import Recipe
from prebake.redact import redact_text

_GUARD_INPUTS = {"recipe-file", "platform-profile"}  # re-stated below without their guard parts
_MAX = 64 << 20  # a stamp is small; a huge one is not ours


def _plain(obj: Any) -> Any:
    if is_dataclass(obj) and not isinstance(obj, type):
        return {"type": type(obj).__name__, **asdict(obj)}
    return obj


def build_inputs(unit: Unit, recipe: Recipe) -> dict[str, str]:
    """The named digests of what can change one recipe's build in this unit (not its guards)."""
    out = {k: v for k, v in unit.recipe_inputs.get(recipe.name, {}).items()
           if k not in _GUARD_INPUTS}
    out.update({k: v for k, v in unit.inputs.items() if k.startswith("unit:")})
    profile = platform_profile(unit.platform)
    profile.pop("contract", None)
    profile.pop("link_test", None)
    out["platform-build-profile"] = canonical_digest(profile)
    strategy = recipe.strategy_for(unit.platform.name)
    out["strategy"] = canonical_digest(json.loads(json.dumps(_plain(strategy), default=str)))
    out["sources"] = canonical_digest(json.loads(json.dumps(
        [_plain(s) for s in recipe.sources], default=str)))
    out["license"] = recipe.outputs.license or ""
    # the stamp stays in the work tree: a source URL's token is not kept there (a token that
    # changes is not another build)
    return {k: redact_text(v) for k, v in out.items()}


def stamps_dir(dirs: WorkDirs) -> Path:
    return dirs.root / "stamps"


def clear(dirs: WorkDirs) -> None:
    """The prefix is about to be recomposed: no earlier stamp describes it any more."""
    shutil.rmtree(stamps_dir(dirs), ignore_errors=True)


def write_composed(dirs: WorkDirs, before: Snapshot) -> None:
    _write(stamps_dir(dirs) / "composed.json", {"before": before})


def write_built(dirs: WorkDirs, unit: Unit, recipe: Recipe, before: frozenset[str],
                installed: frozenset[str]) -> None:
    now = snapshot(dirs.prefix)
    added = {k: v for k, v in now.items() if k not in before}
    _write(stamps_dir(dirs) / f"{recipe.name}.json",
           {"inputs": build_inputs(unit, recipe), "before": sorted(before), "added": added,
            "installed": sorted(installed)})


def _write(path: Path, data: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, sort_keys=True, indent=1))
    tmp.replace(path)


def _read(path: Path) -> dict[str, Any] | None:
    try:
        with path.open("rb") as fh:
            raw = fh.read(_MAX + 1)
        data = json.loads(raw) if len(raw) <= _MAX else None
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def stale(dirs: WorkDirs, unit: Unit) -> str | None:
    """Why the unit's build tree cannot be guarded as the current workspace's build, else
    ``None`` (one line, naming the recipe and what changed)."""
    head = f"--guards-only {unit.id}"
    composed = _read(stamps_dir(dirs) / "composed.json")
    if composed is None or not isinstance(composed.get("before"), dict):
        return (f"{head}: no build tree of this unit in {dirs.root} (build it in full "
                "first: prebake build)")
    now = snapshot(dirs.prefix)
    for recipe in unit.recipes:
        data = _read(stamps_dir(dirs) / f"{recipe.name}.json")
        if data is None:
            return (f"{head}: recipe {recipe.name} was never built in {dirs.root} "
                    "(a full prebake build builds it)")
        old, new = data.get("inputs"), build_inputs(unit, recipe)
        if not isinstance(old, dict) or old != new:
            old = old if isinstance(old, dict) else {}
            changed = sorted(k for k in {*old, *new} if old.get(k) != new.get(k))
            return (f"{head}: recipe {recipe.name}'s build tree was built from other inputs "
                    f"({', '.join(changed)} changed); only guard inputs (link_test, contract, "
                    "Outputs/Snippet) may change — rebuild in full")
        added = data.get("added")
        if not isinstance(added, dict) or not isinstance(data.get("before"), list) \
                or not isinstance(data.get("installed"), list):
            return f"{head}: the stamp of recipe {recipe.name} is unreadable; rebuild in full"
        moved = sorted(k for k, v in added.items() if now.get(k) != v)
        if moved:
            return (f"{head}: {moved[0]} changed in {dirs.prefix} since recipe {recipe.name} "
                    f"built it ({len(moved)} file(s)); rebuild in full")
    return None


def composed_before(dirs: WorkDirs) -> Snapshot:
    data = _read(stamps_dir(dirs) / "composed.json") or {}
    before = data.get("before")
    return {str(k): str(v) for k, v in before.items()} if isinstance(before, dict) else {}


def built_files(dirs: WorkDirs, recipe: Recipe) -> tuple[frozenset[str], frozenset[str]]:
    """The prefix's files before the recipe built, and the files its build installed."""
    data = _read(stamps_dir(dirs) / f"{recipe.name}.json") or {}

    def paths(key: str) -> frozenset[str]:
        got = data.get(key)
        return frozenset(str(p) for p in got) if isinstance(got, list) else frozenset()

    return paths("before"), paths("installed")
