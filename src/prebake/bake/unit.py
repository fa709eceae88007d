"""Building one unit, as step functions: compose → build → guard → package → attest → publish.

Each step takes the unit's fixed :class:`~prebake.bake.unitrun.UnitRun` (workspace, resolved
:class:`Unit`, options, store, log, folders) plus the typed value the previous step returned, and
returns its own frozen value; a step refuses by raising ``UnitFailed`` with a message that says
what. :func:`build_unit` is the chain; :func:`run_unit` runs it and turns the outcome into a
:class:`UnitResult`. To add a step (a toolchain check before ``build_recipe``, a pass over the
files in ``package``), insert a function that takes and returns these values; another proof
per recipe is a guard in ``prebake.bake.guards.GUARDS``.

This module is the chain only; what a step hands off lives beside it: ``from_source`` and
``repackage`` (the two strategies of ``build_recipe``), ``guards`` (the guards of
``guard_recipe``), ``packaging`` (what ``package`` puts into the asset and its manifest, and the
relocation check) and ``stage_files`` (a stage's files saved for later stages, or restored from
its asset by ``compose``).

A *stage unit* (``core/wasm``) builds every recipe of a ``prefix`` stage into one install prefix
that starts as the union of the earlier stages' files, checks that none of those files changed,
and ships the files the stage added as one asset. A *recipe unit* (``onnxruntime/wasm``, stage
``per-recipe``) builds one recipe into its own prefix against a copy of the earlier stages'
prefix (``{deps_prefix}``) and ships that prefix.

Nothing is packaged unless every guard passed, and nothing is published unless packaging
completed; the asset is written atomically, so an interrupted unit leaves no asset behind.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from prebake.bake import stamp
from prebake.bake.dryrun import dry_run_steps, dry_run_verdict
from prebake.bake.from_source import build_from_source
from prebake.bake.guards import GuardInput, license_dest, run_guards
from prebake.bake.immutability import Snapshot, compare, snapshot
from prebake.bake.invocation import host_tool_env
from prebake.bake.layout import Layout, WorkDirs, discard, stage_marker, work_dirs
from prebake.bake.options import Options
from prebake.bake.packaging import (
    asset_entries,
    build_settings,
    combined_order,
    config_files,
    generated_configs,
    relocate_files,
    unit_manifest,
)
from prebake.bake.process import BuildLog
from prebake.bake.repackage import repackage
from prebake.bake.result import GuardReport, UnitResult, UnitState
from prebake.bake.shipped import dep_libraries, prefix_files
from prebake.bake.stage_files import restore_stage, save_stage_files
from prebake.bake.unitrun import Event, UnitFailed, UnitRun, strategy_of, unbuildable
from prebake.diff import build_summary
from prebake.errors import PrebakeError
from prebake.manifest import Manifest, Provenance
from prebake.package.adopt import Adopted, AdoptFailed, adopt_install
from prebake.package.archive import write_asset
from prebake.package.version_proof import files_below
from prebake.plan.model import Unit
from prebake.recipes.model import Build, Recipe, Repackage, host_tools_used
from prebake.sources import SourceCache
from prebake.store.base import Store, read_manifest
from prebake.toolchain.hosttools import HOST_TOOLS
from prebake.toolchain.verify import with_toolchain_prefix
from prebake.trust.hooks import UnitTrust, unit_trust
from prebake.workspace.model import Workspace

# ---- the values the steps pass on ----------------------------------------------------------

@dataclass(frozen=True)
class Composed:
    """The unit's prefix (and ``deps``) filled with the earlier stages' files, and what those
    files were before any recipe ran (the immutability guard compares against it)."""

    before: Snapshot


@dataclass(frozen=True)
class RecipeBuilt:
    """One recipe's outputs are in the prefix (built, or repackaged from upstream)."""

    recipe: Recipe
    strategy: Build | Repackage
    work: Path
    before: frozenset[str] = frozenset()  # the prefix's files before it built (not its own)
    installed: frozenset[str] = frozenset()  # the files the recipe added to the prefix


@dataclass(frozen=True)
class RecipeGuarded:
    """One recipe's outputs passed every guard; ``outcome`` holds what the guards found."""

    recipe: Recipe
    outcome: GuardReport
    adopted: Adopted | None = None  # the version proof and the install's CMake packages


@dataclass(frozen=True)
class Guarded:
    """Every recipe passed its guards and no earlier stage's file changed; ``added`` are the
    files the unit added to a shared prefix (what a stage unit ships)."""

    recipes: tuple[RecipeGuarded, ...]
    added: tuple[str, ...]


@dataclass(frozen=True)
class Packaged:
    """The asset and its ``.sha256``/``.json`` sidecars written in the unit's dist folder."""

    path: Path
    sha256: str
    manifest: Manifest
    trust: UnitTrust


@dataclass(frozen=True)
class Attested:
    """The asset plus its provenance statement (``<asset>.intoto.json``)."""

    packaged: Packaged
    statement: Path


@dataclass(frozen=True)
class Published:
    """What the unit's last step did: the asset (published unless ``--no-publish``) and, with
    ``--diff``, its diff against the store's current asset."""

    path: Path
    sha256: str
    diff: Mapping[str, Any] | None = None
    diff_markdown: str = ""
    deferred: bool = False  # --diff: published once every unit's diff is known (bake.build)


class BreakingDiff(UnitFailed):
    """The new asset breaks consumers of the store's previous one: the unit fails, nothing of
    the build is published, and the diff still goes to the step summary."""

    def __init__(self, message: str, diff: Mapping[str, Any] | None, markdown: str) -> None:
        super().__init__(message)
        self.diff = diff
        self.markdown = markdown


# ---- step 0: preflight ------------------------------------------------------------------------

def preflight(run: UnitRun) -> None:
    """Refuse before any work what can never succeed: no strategy, a download whose digest
    is not in prebake.sources.lock (the message names the ``prebake pin`` to run)."""
    for recipe in run.unit.recipes:
        why = unbuildable(recipe, run.unit.platform.name)
        if why is not None:
            raise UnitFailed(why)
    if run.unit.unlocked:
        raise UnitFailed("; ".join(run.unit.unlocked))
    check_host_tools(run)


def check_host_tools(run: UnitRun) -> None:
    """Every host tool a recipe's commands name is on the build's PATH, runs on this machine
    and reports the release the recipe demands (``prebake.toolchain.hosttools``)."""
    env = host_tool_env(run.unit, run.opts)
    for recipe in run.unit.recipes:
        for tool in host_tools_used(recipe, run.unit.platform.name):
            found = HOST_TOOLS.find(tool, env)
            if not found.ok:
                raise UnitFailed(f"{recipe.name}/{run.unit.platform.name}: {found.error}")
            run.log.write(f"# host tool {tool.name}: {found.path} reports "
                          f"{found.version_line!r} (needs {tool.version})")


# ---- step 1: compose ------------------------------------------------------------------------

def compose(run: UnitRun) -> Composed:
    """Fill the unit's ``deps`` with the files of every upstream stage (from this workspace's
    earlier builds, or restored from their assets in the store); a per-recipe unit also gets
    an empty prefix of its own."""
    unit, dirs = run.unit, run.dirs
    into = dirs.deps
    stamp.clear(dirs)
    if into.exists():
        shutil.rmtree(into)
    into.mkdir(parents=True)
    for stage in run.ws.upstream_stages(unit.stage.name):
        files = run.layout.stage_files(unit.platform.name, stage)
        up = unit.upstream_unit(stage)
        want = up.input_hash if up is not None else ""
        marker = stage_marker(files)
        if not files.is_dir() or not marker.is_file() or marker.read_text().strip() != want:
            restore_stage(run, stage, up, files)
        shutil.copytree(files, into, symlinks=True, dirs_exist_ok=True)
    if not dirs.shared_prefix:
        if dirs.prefix.exists():
            shutil.rmtree(dirs.prefix)
        dirs.prefix.mkdir(parents=True)
    before = snapshot(dirs.deps)
    stamp.write_composed(dirs, before)
    return Composed(before=before)


# ---- step 2: build (one recipe) --------------------------------------------------------------

def build_recipe(run: UnitRun, recipe: Recipe) -> RecipeBuilt:
    """Put one recipe's outputs (and its licence) into the prefix, in a fresh work folder."""
    strategy = strategy_of(run, recipe)
    if run.cancel.is_set():
        raise UnitFailed("cancelled")
    work = run.dirs.recipe(recipe)
    old = discard(work)
    work.mkdir(parents=True)
    before = frozenset(prefix_files(run.dirs.prefix))
    try:
        if isinstance(strategy, Repackage):
            repackage(run, recipe, strategy, work)
        else:
            build_from_source(run, recipe, strategy, work, sources_in=old.delete)
    finally:
        old.delete()  # a repackage, or a build that failed before its sources were in
    _install_license(recipe, work, run.dirs.prefix)
    installed = frozenset(files_below(run.dirs.prefix) - before)
    stamp.write_built(run.dirs, run.unit, recipe, before, installed)
    return RecipeBuilt(recipe, strategy, work, before, installed)


def reuse_recipe(run: UnitRun, recipe: Recipe) -> RecipeBuilt:
    """``--guards-only``: the recipe's outputs as its last build left them (the stamp, checked
    against the current inputs, says what was in the prefix before it built)."""
    strategy = strategy_of(run, recipe)
    run.say(f"{recipe.name}: --guards-only, reusing the build tree in {run.dirs.root}")
    before, installed = stamp.built_files(run.dirs, recipe)
    return RecipeBuilt(recipe, strategy, run.dirs.recipe(recipe), before, installed)


def _install_license(recipe: Recipe, work: Path, prefix: Path) -> None:
    """Put the recipe's licence (a path in its source or upstream archive) into the prefix
    at ``share/licenses/<recipe>/``, unless the build or layout already did."""
    lic, dest = recipe.outputs.license, license_dest(recipe)
    if not lic or not dest or (prefix / dest).exists():
        return
    for base in (prefix, work / "src", work / "upstream"):
        if (base / lic).is_file():
            (prefix / dest).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(base / lic, prefix / dest)
            return


# ---- step 3: guard ----------------------------------------------------------------------------

def guard_recipe(run: UnitRun, built: RecipeBuilt) -> RecipeGuarded:
    """Inspect, contract-check and link-test one recipe's outputs; any failure fails the unit."""
    recipe, dirs, p = built.recipe, run.dirs, run.unit.platform
    run.say(f"{recipe.name}: guards (inspect, contract, link test)")
    dep_libs = dep_libraries(run.ws.recipes, recipe, p.name, dirs.deps)
    outcome = run_guards(GuardInput(
        recipe, p, dirs.prefix, built.work, run.log, dep_libs=tuple(dep_libs),
        include_dirs=() if dirs.shared_prefix else (dirs.deps / "include",),
        before=built.before))
    if not outcome.ok:
        raise UnitFailed("\n".join(outcome.failures), outcome.violations)
    return RecipeGuarded(recipe, outcome)


def prove_install(run: UnitRun, built: RecipeBuilt, guarded: RecipeGuarded) -> RecipeGuarded:
    """The recipe's own install, before prebake adds to it: every version it states agrees
    with the pin, and its CMake packages are kept with ``<name>::<name>`` added beside them
    (``prebake.package.adopt``)."""
    recipe = built.recipe
    run.say(f"{recipe.name}: version proof and the install's CMake packages")
    try:
        adopted = adopt_install(recipe, run.version(recipe), run.unit.platform.arch,
                                run.dirs.prefix, built.installed, guarded.outcome.libs)
    except AdoptFailed as exc:
        raise UnitFailed(str(exc)) from None
    for e in adopted.proof.evidence:
        run.log.write(f"# version evidence: {e.render()} (pin {adopted.proof.pin}): agrees")
    for rel in adopted.changed:
        run.log.write(f"# {rel}: the asset's own CMake target, beside upstream's package")
    return replace(guarded, adopted=adopted)


def export_configs(run: UnitRun, guarded: RecipeGuarded) -> None:
    """CMake and pkg-config files per recipe, into the prefix (kept if the recipe made its
    own), so later recipes and stages can ``find_package`` what earlier ones installed.
    No CMake files when the install's own CMake package serves the recipe's name."""
    recipe, outcome = guarded.recipe, guarded.outcome
    ver = run.version(recipe)
    req = [d for d in recipe.deps if d in run.ws.recipes]
    own_cmake = guarded.adopted is None or guarded.adopted.generate_cmake
    files = config_files(run, recipe.name, ver, outcome.libs, outcome.link_order,
                         cxx=outcome.cxx, requires=req, cmake_too=own_cmake)
    for rel, data in files.items():
        path = run.dirs.prefix / rel
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)


def guard_unchanged(run: UnitRun, composed: Composed,
                    recipes: Sequence[RecipeGuarded]) -> Guarded:
    """No file an earlier stage installed changed or disappeared (it already shipped)."""
    unit = run.unit
    diff = compare(composed.before, snapshot(run.dirs.deps))
    if not diff.ok:
        raise UnitFailed(diff.render(f"{unit.stage.name} ({unit.recipe})"
                                     if unit.recipe is not None else unit.stage.name))
    return Guarded(tuple(recipes), tuple(diff.added))


# ---- step 4: package --------------------------------------------------------------------------

def package(run: UnitRun, guarded: Guarded) -> Packaged:
    """Write the asset: the unit's files, its generated CMake/pkg-config files, the SBOM, and
    the manifest (what the guards proved, the toolchain, the inputs, the provenance)."""
    unit, dirs, ws = run.unit, run.dirs, run.ws
    prefix, aid = dirs.prefix, unit.asset
    outcomes = [(g.recipe, g.outcome) for g in guarded.recipes]
    entries = asset_entries(unit, prefix, guarded.added)
    order = combined_order(outcomes, prefix)
    generated = generated_configs(run, outcomes, order)
    settings = {r.name: build_settings(run, r) for r, _o in outcomes}
    manifest = unit_manifest(run, outcomes, order, settings,
                             [(g.recipe.name, g.adopted.proof) for g in guarded.recipes
                              if g.adopted is not None])
    trust = unit_trust(ws, unit, manifest.toolchain.to_json(), dirs.root, run.started_on,
                       dirs.dist, settings)
    # deterministic: no times, no host
    manifest = replace(manifest, provenance=Provenance.from_json(trust.definition, aid.filename))
    generated.update(trust.generated)  # share/prebake/sbom.cdx.json
    entries = relocate_files(run, entries, generated, manifest)
    run.say(f"packaging {aid.filename}")
    path = write_asset(prefix, aid, manifest, dirs.dist, generated=generated, entries=entries)
    digest = (dirs.dist / aid.sha256_name).read_text().split()[0]
    return Packaged(path, digest, manifest, trust)


# ---- step 5: attest ---------------------------------------------------------------------------

def attest(run: UnitRun, packaged: Packaged) -> Attested:
    """``<asset>.intoto.json``: the provenance statement for the asset's sha256."""
    statement = packaged.trust.finish(packaged.path, packaged.sha256)
    return Attested(packaged, statement)


# ---- step 6: publish --------------------------------------------------------------------------

def publish(run: UnitRun, attested: Attested) -> Published:
    """Diff against the store's current asset (``--diff``), then publish (unless told not to).

    With ``--diff`` a breaking diff fails the unit (``--allow-breaking`` lets it through) and
    publishing waits until every unit's diff is known, so one breaking unit publishes nothing
    of the build (``prebake.bake.build`` publishes the rest, or not)."""
    path, digest = attested.packaged.path, attested.packaged.sha256
    store, name = run.store, attested.packaged.path.name
    diff: Mapping[str, Any] | None = None
    markdown = ""
    if run.opts.diff:
        run.say(f"diffing {name} against {store.url}")
        result, markdown = build_summary(path, store)
        diff = result.to_json() if result is not None else None
        if result is not None and result.breaking and not run.opts.allow_breaking:
            n = result.counts()["breaking"]
            raise BreakingDiff(
                f"{name}: {n} breaking change(s) against {result.old.get('label')} in "
                f"{store.url}; nothing published (consumers of the previous asset would fail; "
                "--allow-breaking publishes anyway)", diff, markdown)
        return Published(path, digest, diff, markdown, deferred=run.opts.publish)
    if run.opts.publish:
        run.say(f"publishing {name} to {store.url}")
        store.publish(path)
    return Published(path, digest, diff, markdown)


# ---- the chain ----------------------------------------------------------------------------

def build_unit(run: UnitRun) -> Published:
    """The steps in order; each recipe is built and guarded before the next one builds on it."""
    preflight(run)
    if run.opts.guards_only:
        why = stamp.stale(run.dirs, run.unit)
        if why is not None:
            raise UnitFailed(why)
        composed = Composed(before=stamp.composed_before(run.dirs))
    else:
        composed = compose(run)
    guarded_recipes: list[RecipeGuarded] = []
    for recipe in run.unit.recipes:
        built = (reuse_recipe(run, recipe) if run.opts.guards_only
                 else build_recipe(run, recipe))
        guarded_recipe = prove_install(run, built, guard_recipe(run, built))
        export_configs(run, guarded_recipe)
        guarded_recipes.append(guarded_recipe)
    guarded = guard_unchanged(run, composed, guarded_recipes)
    published = publish(run, attest(run, package(run, guarded)))
    if not run.unit.per_recipe:
        save_stage_files(run, guarded.added)
    return published


def skip_reason(store: Store, unit: Unit, force: bool) -> tuple[bool, str]:
    """Whether the store already holds this unit's asset built from the same inputs."""
    if force:
        return False, "--force"
    m = read_manifest(store, unit.asset)
    if m is not None and m.input_hash == unit.input_hash:
        return True, "input hash matches the asset in the store"
    return False, ("no asset in the store" if m is None
                   else "input hash differs from the asset in the store")


def run_platform(unit: Unit, dirs: WorkDirs) -> Unit:
    """The unit as its commands run: a compiler a stage installs is in this unit's deps."""
    if not unit.platform.toolchain.from_stage:
        return unit
    return replace(unit, platform=with_toolchain_prefix(unit.platform, str(dirs.deps)))


def guards_only_refusal(ws: Workspace, unit: Unit) -> str | None:
    """Why ``build --guards-only`` cannot guard this unit's build tree (one line), else None."""
    dirs = work_dirs(Layout(ws.root), unit)
    return stamp.stale(dirs, run_platform(unit, dirs))


def run_unit(ws: Workspace, unit: Unit, opts: Options, store: Store, emit: Event,
             cancel: threading.Event) -> UnitResult:
    """Skip, dry-run or build one unit; every failure ends as this unit's result, not a raise."""
    t0 = time.monotonic()
    res = UnitResult(unit.id, UnitState.FAILED, asset=unit.asset.filename,
                     input_hash=unit.input_hash, want_diff=opts.diff)
    cache = opts.cache or SourceCache()
    if opts.dry_run:
        return replace(res, state=UnitState.PLANNED,
                        dry_run=dry_run_steps(ws, unit, opts, cache),
                        reason=dry_run_verdict(store, unit, opts.force))
    skip, reason = skip_reason(store, unit, opts.force)
    res = replace(res, reason=reason)
    if skip:
        return replace(res, state=UnitState.SKIPPED, seconds=time.monotonic() - t0)
    layout = Layout(ws.root)
    log = BuildLog(layout.log(unit.id))
    res = replace(res, log=str(log.path))
    dirs = work_dirs(layout, unit)
    unit = run_platform(unit, dirs)
    run = UnitRun(ws=ws, unit=unit, opts=opts, store=store, dirs=dirs,
                  layout=layout, log=log, cache=cache, cancel=cancel, emit=emit,
                  started_on=time.time(), t0=t0)
    try:
        log.write(f"# prebake build {unit.id}  input hash {unit.input_hash}")
        published = build_unit(run)
        res = replace(res, state=UnitState.BUILT, sha256=published.sha256,
                       asset=published.path.name, diff=published.diff,
                       diff_markdown=published.diff_markdown,
                       to_publish=published.path if published.deferred else None)
    except BreakingDiff as exc:
        res = replace(res, message=str(exc), breaking=True, diff=exc.diff,
                      diff_markdown=exc.markdown)
        log.write(f"# FAILED: {exc}")
    except UnitFailed as exc:
        res = replace(res, message=str(exc), violations=exc.violations)
        log.write(f"# FAILED: {exc}")
    except PrebakeError as exc:
        res = replace(res, message=str(exc))
        log.write(f"# FAILED: {exc}")
    except Exception as exc:  # a bug or a missing module still fails only this unit, loudly
        res = replace(res, message=f"internal error: {type(exc).__name__}: {exc}")
        log.write(f"# FAILED: {res.message}")
    finally:
        log.close()
    return replace(res, seconds=time.monotonic() - t0)
