"""What a unit's prefix holds and was built from: snapshots of its files, the
stage-immutability guard, the build stamps of ``build --guards-only``, and the files a stage
unit added, kept for the later stages that build on them (saved after the stage passed
everything, restored from its asset in the store when not built here).

A *snapshot* is every file and symlink under a prefix with its content hash. The
stage-immutability guard compares two: a later stage may add files to the prefix, never change
or delete one an earlier stage installed (that file already shipped in the earlier stage's
asset).

After a recipe's build step the builder writes ``<unit work>/stamps/<recipe>.json``: the named
digests of every *non-guard* input of the build (``Unit.build_inputs``, made by the planner:
the recipe's strategy — commands, env, downloads, layout —, its sources, declared files, pins,
the toolchain's measured identity, the platform's build profile, the earlier units it builds
on) plus the prefix's files before it built and a digest of every file it added. Guard inputs
are left out on purpose: the platform's ``link_test``, the contract, and the recipe's
``Outputs``/``Snippet`` may change between a failed run and ``--guards-only``, which re-runs
only the guards.

``--guards-only`` refuses when a stamp is missing, names another input than the workspace now
asks for, or a file the build added changed since: proving a stale or hand-edited tree would
lie about what the asset (published under the *current* input hash) was built from.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prebake.bake.layout import WorkDirs, stage_marker
from prebake.bake.unitrun import UnitFailed, UnitRun
from prebake.digest import file_sha256
from prebake.errors import PrebakeError
from prebake.model.recipe import Recipe
from prebake.package.naming import SHA256_SUFFIX, parse_sha256_line
from prebake.plan.units import Unit
from prebake.sources.unpack import extract
from prebake.store.base import read_manifest

Snapshot = dict[str, str]  # posix path relative to the prefix -> sha256 (or "link:<target>")


def snapshot(prefix: Path) -> Snapshot:
    """Every file and symlink under ``prefix`` with its content hash."""
    out: Snapshot = {}
    if not prefix.is_dir():
        return out
    for dirpath, dirnames, filenames in os.walk(prefix):
        d = Path(dirpath)
        for name in filenames + [n for n in dirnames if (d / n).is_symlink()]:
            p = d / name
            rel = p.relative_to(prefix).as_posix()
            if p.is_symlink():
                out[rel] = "link:" + str(p.readlink())
                continue
            out[rel] = file_sha256(p)
    return out


@dataclass
class StageDiff:
    changed: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.changed and not self.deleted

    def render(self, stage: str, limit: int = 20) -> str:
        lines = [f"stage {stage!r} modified files an earlier stage installed "
                 "(a later stage may only add files):"]
        for kind, paths in (("changed", self.changed), ("deleted", self.deleted)):
            lines += [f"  {kind}: {p}" for p in paths[:limit]]
            if len(paths) > limit:
                lines.append(f"  … and {len(paths) - limit} more {kind}")
        return "\n".join(lines)


def compare(before: Snapshot, after: Snapshot) -> StageDiff:
    return StageDiff(
        changed=sorted(p for p in before if p in after and after[p] != before[p]),
        deleted=sorted(p for p in before if p not in after),
        added=sorted(p for p in after if p not in before),
    )


def prefix_files(prefix: Path) -> list[str]:
    """Every file and symlink below ``prefix``, relative, sorted (folders left out)."""
    if not prefix.is_dir():
        return []
    return sorted(p.relative_to(prefix).as_posix() for p in prefix.rglob("*")
                  if p.is_symlink() or p.is_file())


_MAX = 64 << 20  # a stamp is small; a huge one is not ours


def stamps_dir(dirs: WorkDirs) -> Path:
    return dirs.root / "stamps"


def clear(dirs: WorkDirs) -> None:
    """The prefix is about to be recomposed: no earlier stamp describes it any more."""
    shutil.rmtree(stamps_dir(dirs), ignore_errors=True)


def write_composed(dirs: WorkDirs, before: Snapshot) -> None:
    _write(stamps_dir(dirs) / "composed.json", {"before": before})


def write_built(dirs: WorkDirs, unit: Unit, recipe: Recipe, before: frozenset[str]
                ) -> frozenset[str]:
    """Stamp what the recipe's build put into the prefix; returns the files it installed
    (every file there now that was not there ``before``)."""
    installed = frozenset(prefix_files(dirs.prefix)) - before
    now = snapshot(dirs.prefix)
    added = {k: v for k, v in now.items() if k not in before}
    _write(stamps_dir(dirs) / f"{recipe.name}.json",
           {"inputs": unit.build_inputs[recipe.name], "before": sorted(before), "added": added,
            "installed": sorted(installed)})
    return installed


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
        old, new = data.get("inputs"), dict(unit.build_inputs[recipe.name])
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


# ---- a stage's files, kept for the later stages that build on them -----------------------

def restore_stage(run: UnitRun, stage: str, up: Unit | None, files: Path) -> None:
    """An upstream stage not built here (or built from other inputs): take its files from
    its asset in the store, which must have been built from the current inputs."""
    if up is None:
        raise UnitFailed(f"stage {stage} has no files here and no asset to restore them from")
    store, aid = run.store, up.asset
    manifest = read_manifest(store, aid)
    if manifest is not None and manifest.input_hash != up.input_hash:
        raise UnitFailed(f"{run.unit.id} builds on stage {stage}, whose asset "
                         f"{aid.filename} in {store.url} was built from other inputs "
                         f"(build --stage {stage} first)")
    run.say(f"restoring stage {stage} from {aid.filename} in the store")
    tmp = files.with_name(files.name + ".download")
    tmp.parent.mkdir(parents=True, exist_ok=True)
    try:
        store.download(aid, tmp)
    except PrebakeError as exc:
        raise UnitFailed(
            f"{run.unit.id} builds on stage {stage}, which was not built here and whose "
            f"asset {aid.filename} is not in {store.url} (build --stage {stage} "
            f"first): {exc}") from None
    want = store.read_sidecar(aid, SHA256_SUFFIX)
    got = file_sha256(tmp)
    if want is None or parse_sha256_line(want.decode(), aid.filename) != got:
        tmp.unlink(missing_ok=True)
        raise UnitFailed(f"{aid.filename} from {store.url} does not match its "
                         f".sha256 sidecar; not building on it")
    new = files.with_name(files.name + ".new")
    try:
        shutil.rmtree(new, ignore_errors=True)
        extract(tmp, new)
        shutil.rmtree(files, ignore_errors=True)
        new.rename(files)
        stage_marker(files).write_text(up.input_hash + "\n")
    finally:
        tmp.unlink(missing_ok=True)


def save_stage_files(run: UnitRun, added: Sequence[str]) -> None:
    """Keep the files a stage unit added, for later stages to build upon (only a stage that
    passed everything is built upon)."""
    unit, prefix = run.unit, run.dirs.prefix
    dest = run.layout.stage_files(unit.platform.name, unit.stage.name)
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    for rel in added:
        src = prefix / rel
        if not src.is_symlink() and not src.exists():
            continue  # packaging dropped it (a libtool .la)
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            (tmp / rel).symlink_to(str(src.readlink()))
        else:
            shutil.copy2(src, tmp / rel)
    tmp.mkdir(parents=True, exist_ok=True)
    stage_marker(dest).unlink(missing_ok=True)
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)
    stage_marker(dest).write_text(unit.input_hash + "\n")

