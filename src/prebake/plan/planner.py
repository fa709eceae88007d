"""Make the plan: every (stage or recipe) × platform unit in build order, with its input hash.

A stage packaged as one prefix is one unit per platform whose hash covers its recipes' inputs
and the units of the stages it comes ``after`` (their outputs are in its build's prefix). In a
``per-recipe`` stage each recipe is a unit; its hash covers the units holding the ``deps`` it
builds against, so an unrelated change upstream does not rebuild it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from prebake.errors import PrebakeError
from prebake.model.workspace import Platform, Stage, Workspace
from prebake.package import ASSET_FORMAT
from prebake.package.naming import asset_id
from prebake.plan.hashing import (
    HASH_SCHEME,
    Identify,
    ToolchainIdentity,
    build_inputs,
    canonical_digest,
    recipe_inputs,
)
from prebake.plan.units import Plan, Unit
from prebake.redact import redact_text
from prebake.sources.lock import (
    SourceLock,
    git_commit_of,
    git_refs,
    locked_recipe,
    read_source_lock,
    status_of,
    url_refs,
)

_IDENTITY = ToolchainIdentity()  # one per process: each compiler's --version runs once per run


def _dep_unit(ws: Workspace, dep: str, platform: str) -> str | None:
    stage = ws.stage_of(dep)
    if stage is None:
        return None
    return f"{stage}/{platform}" if ws.stages[stage].package == "prefix" else f"{dep}/{platform}"


def _stage_identity(ws: Workspace, stage: Stage, platform: Platform, done: dict[str, Unit],
                    identify: Identify) -> Identify:
    """A toolchain built by a stage (``from_stage``) is identified by that stage's unit: its
    input hash, so changing the recipe that makes the compiler changes every unit built with
    it. The stage itself (and the stages it builds on) come before the compiler exists."""
    src = platform.toolchain.from_stage
    if src is None:
        return identify
    if stage.name == src or stage.name in ws.upstream_stages(src):
        return lambda _p, _pins: f"bootstrap: built before stage {src} installs the toolchain"
    maker = done.get(f"{src}/{platform.name}")
    if maker is None:  # validation makes every other stage come after it
        raise PrebakeError(f"platform {platform.name}: toolchain stage {src} has no unit")
    return lambda _p, _pins: f"from stage {src}: {maker.input_hash}"


def _stage_units(ws: Workspace, stage: Stage, platform: Platform, done: dict[str, Unit],
                 identify: Identify, cache: dict[tuple[str, Path], str], lock: SourceLock
                 ) -> list[Unit]:
    p = platform.name
    covering = tuple(r for r in stage.recipes if ws.recipes[r].strategy_for(p) is not None)
    if not covering:
        return []
    after = tuple(u.id for u in done.values()
                  if u.platform.name == p and u.stage.name in stage.after)
    earlier = set(ws.upstream_stages(stage.name))
    upstream = tuple(u for u in done.values() if u.platform.name == p and u.stage.name in earlier)
    identify = _stage_identity(ws, stage, platform, done, identify)
    rin = {r: recipe_inputs(ws.recipes[r], platform, ws.pins, identify, cache, lock,
                            shared_prefix=stage.package == "prefix", root=ws.root,
                            provided=ws.provided)
           for r in covering}
    # each recipe as this platform builds it: URLs resolved, digests from the source lock
    locked = {r: locked_recipe(ws.recipes[r], p, platform.os, platform.arch, ws.pins, lock,
                            ws.provided)
              for r in covering}
    if stage.package == "prefix":
        inputs = {"hash-scheme": HASH_SCHEME, "asset-format": str(ASSET_FORMAT),
                  "project-version": ws.project.version}
        inputs.update({f"recipe:{r}": canonical_digest(rin[r]) for r in covering})
        inputs.update({f"unit:{uid}": done[uid].input_hash for uid in after})
        return [Unit(
            id=f"{stage.name}/{p}", stage=stage, platform=platform,
            recipes=tuple(locked[r][0] for r in covering),
            input_hash=canonical_digest(inputs), inputs=inputs, deps=after,
            asset=asset_id(f"{ws.project.name}-{stage.name}", ws.project.version, p),
            upstream=upstream, recipe_inputs=rin,
            build_inputs={r: build_inputs(locked[r][0], platform, rin[r], inputs)
                          for r in covering},
            unlocked=tuple(m for r in covering for m in locked[r][1]),
        )]
    units: list[Unit] = []
    for r in covering:
        recipe = ws.recipes[r]
        inputs = dict(rin[r])
        same_stage: list[str] = []
        for dep in recipe.deps:
            uid = _dep_unit(ws, dep, p)
            built = done.get(uid or "") or next((u for u in units if u.id == uid), None)
            if built is not None:
                inputs[f"unit:{built.id}"] = built.input_hash
                if built.stage.name == stage.name:
                    same_stage.append(built.id)
        units.append(Unit(
            id=f"{r}/{p}", stage=stage, platform=platform, recipes=(locked[r][0],),
            input_hash=canonical_digest(inputs), inputs=inputs, deps=(*after, *same_stage),
            asset=asset_id(r, ws.pins[recipe.pin], p), upstream=upstream,
            recipe_inputs={r: rin[r]},
            build_inputs={r: build_inputs(locked[r][0], platform, rin[r], inputs)},
            unlocked=tuple(locked[r][1]),
        ))
    return units


def make_plan(ws: Workspace, stage: str | None = None,
              platform: str | Sequence[str] | None = None, *,
              identify: Identify | None = None) -> Plan:
    """Units of the selected stage (or alias) and platform(s), in build order.

    Hashes of units outside the selection are still computed: a selected unit's hash covers
    the stages it comes after. Several platforms come out platform by platform, in the order
    given (each platform's units in build order).
    """
    identify = identify or _IDENTITY
    if isinstance(identify, ToolchainIdentity):
        identify.prefetch(list(ws.platforms.values()), ws.pins)
    stages = ws.stage_names(stage)
    if platform is None or isinstance(platform, str):
        platforms = ws.platform_names(platform)
    else:
        platforms = tuple(dict.fromkeys(p for name in platform for p in ws.platform_names(name)))
    done: dict[str, Unit] = {}
    cache: dict[tuple[str, Path], str] = {}  # file/tree digests, read once per plan
    lock = read_source_lock(ws.root)
    needed = set(stages)
    for s in stages:
        needed.update(ws.upstream_stages(s))
    for s in ws.stage_order():
        if s not in needed:
            continue
        for p in platforms:
            for unit in _stage_units(ws, ws.stages[s], ws.platforms[p], done, identify, cache,
                                     lock):
                done[unit.id] = unit
    units = tuple(u for u in done.values() if u.stage.name in stages)
    refuse_unlocked(ws, units, lock)
    if platform is not None and not isinstance(platform, str):
        units = tuple(sorted(units, key=lambda u: platforms.index(u.platform.name)))
    return Plan(units=units, stages=stages, platforms=platforms)


def refuse_unlocked(ws: Workspace, units: tuple[Unit, ...], lock: SourceLock) -> None:
    """A URL the lock has never seen means a pin or recipe was edited without ``prebake pin``:
    building it would pair the new name with bytes nobody checked, so no plan is made. (An URL
    ``pin`` recorded as pending only stops its own unit, at build time.)"""
    missing: dict[str, list[str]] = {}
    for u in units:
        p = u.platform
        for r in u.recipes:
            for ref in url_refs(ws.recipes[r.name], p.name, p.os, p.arch, ws.pins,
                                ws.provided):
                if status_of(ref, lock) == "missing":
                    missing.setdefault(ref.command, []).append(f"{ref.url} ({u.id})")
            for gref in git_refs(ws.recipes[r.name], p.name, ws.pins):
                if git_commit_of(gref, lock) is None:
                    missing.setdefault(gref.command, []).append(
                        f"git {gref.url} at {gref.ref} ({u.id})")
    if missing:
        fixes = "; ".join(f"run `{cmd}` (it downloads and locks {', '.join(dict.fromkeys(urls))})"
                          for cmd, urls in missing.items())

        raise PrebakeError(redact_text(
            f"{lock.path}: no digest for the source URLs (or commit for the git refs) the pins "
            f"resolve to (a pin or recipe changed without `prebake pin`): {fixes}"))
