"""Building one unit, as step functions: preflight → compose → per recipe build, guard,
prove, export → guard unchanged → package → attest → publish.

The chain, what each step reads and hands off, and where a new step goes are described once,
in docs/architecture.md ("prebake build, step by step"). Each step takes the unit's fixed
:class:`~prebake.bake.unitrun.UnitRun` plus the frozen value the previous step returned
(``prebake.bake.values``) and returns its own; a step refuses by raising ``UnitFailed``.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from prebake.bake import stamp
from prebake.bake.from_source import build_from_source
from prebake.bake.guards import GuardInput, dep_libraries, license_dest, run_guards
from prebake.bake.layout import discard, stage_marker
from prebake.bake.packaging import (
    asset_entries,
    build_settings,
    combined_order,
    config_files,
    generated_configs,
    relocate_files,
    unit_manifest,
)
from prebake.bake.repackage import repackage
from prebake.bake.unitrun import UnitFailed, UnitRun
from prebake.bake.values import (
    Attested,
    Composed,
    Guarded,
    Packaged,
    Published,
    RecipeBuilt,
    RecipeGuarded,
)
from prebake.diff import build_summary
from prebake.manifest import Provenance
from prebake.model.recipe import Recipe, Repackage, Strategy
from prebake.package.adopt import AdoptFailed, adopt_install
from prebake.package.archive import block_cache, write_asset
from prebake.trust.hooks import unit_trust


class BreakingDiff(UnitFailed):
    """The new asset breaks consumers of the store's previous one: the unit fails, nothing of
    the build is published, and the diff still goes to the step summary."""

    def __init__(self, message: str, diff: Mapping[str, Any] | None, markdown: str) -> None:
        super().__init__(message)
        self.diff = diff
        self.markdown = markdown


# ---- step 0: preflight ------------------------------------------------------------------------

def preflight(run: UnitRun) -> dict[str, Strategy]:
    """Refuse before any work what can never succeed: no strategy, a download whose digest
    is not in prebake.sources.lock (the message names the ``prebake pin`` to run), a host
    tool that is not what the recipe demands. Returns each recipe's strategy."""
    strategies: dict[str, Strategy] = {}
    for recipe in run.unit.recipes:
        strategy = recipe.strategy_for(run.unit.platform.name)
        if strategy is None:
            raise UnitFailed(f"recipe {recipe.name} has no strategy for "
                             f"{run.unit.platform.name}")
        strategies[recipe.name] = strategy
    if run.unit.unlocked:
        raise UnitFailed("; ".join(run.unit.unlocked))
    check_host_tools(run)
    return strategies


def check_host_tools(run: UnitRun) -> None:
    """Every host tool a recipe's commands name is on the build's PATH, runs on this machine
    and reports the release the recipe demands (found once, with the build environment)."""
    for recipe in run.unit.recipes:
        for found in run.env.host_tools[recipe.name]:
            if not found.ok:
                raise UnitFailed(f"{recipe.name}/{run.unit.platform.name}: {found.error}")
            run.log.write(f"# host tool {found.tool.name}: {found.path} reports "
                          f"{found.version_line!r} (needs {found.tool.version})")


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
            stamp.restore_stage(run, stage, up, files)
        shutil.copytree(files, into, symlinks=True, dirs_exist_ok=True)
    if not dirs.shared_prefix:
        if dirs.prefix.exists():
            shutil.rmtree(dirs.prefix)
        dirs.prefix.mkdir(parents=True)
    before = stamp.snapshot(dirs.deps)
    stamp.write_composed(dirs, before)
    return Composed(before=before)


# ---- step 2: build (one recipe) --------------------------------------------------------------

def build_recipe(run: UnitRun, recipe: Recipe, strategy: Strategy) -> RecipeBuilt:
    """Put one recipe's outputs (and its licence) into the prefix, in a fresh work folder."""
    if run.cancel.is_set():
        raise UnitFailed("cancelled")
    work = run.dirs.recipe(recipe)
    old = discard(work)
    work.mkdir(parents=True)
    before = frozenset(stamp.prefix_files(run.dirs.prefix))
    try:
        if isinstance(strategy, Repackage):
            repackage(run, recipe, strategy, work)
        else:
            build_from_source(run, recipe, strategy, work, sources_in=old.delete,
                              earlier=old.moved)
    finally:
        old.delete()  # a repackage, or a build that failed before its sources were in
    _install_license(recipe, work, run.dirs.prefix)
    installed = stamp.write_built(run.dirs, run.unit, recipe, before)
    return RecipeBuilt(recipe, strategy, work, before, installed)


def reuse_recipe(run: UnitRun, recipe: Recipe, strategy: Strategy) -> RecipeBuilt:
    """``--guards-only``: the recipe's outputs as its last build left them (the stamp, checked
    against the current inputs, says what was in the prefix before it built)."""
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
        recipe, p, dirs.prefix, built.work, run.log, run.env.base, dep_libs=tuple(dep_libs),
        include_dirs=() if dirs.shared_prefix else (dirs.deps / "include",),
        before=built.before, pins=run.ws.pins))
    for other in outcome.producers.other if outcome.producers else ():
        run.say(f"{recipe.name}: {other.file} names {', '.join(other.says) or 'no compiler'}, "
                f"not the platform's toolchain: allowed by other_compilers ({other.why})")
    return RecipeGuarded(recipe, built.strategy, outcome)


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
    diff = stamp.compare(composed.before, stamp.snapshot(run.dirs.deps))
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
    settings = {g.recipe.name: build_settings(run, g.recipe, g.strategy)
                for g in guarded.recipes}
    manifest = unit_manifest(run, outcomes, order, settings,
                             [(g.recipe.name, g.adopted.proof) for g in guarded.recipes
                              if g.adopted is not None])
    trust = unit_trust(ws, unit, manifest.toolchain.to_json(), dirs.root, run.started_on,
                       dirs.dist, settings, {r.name: r.license for r in manifest.recipes or ()
                                             if r.license})
    # deterministic: no times, no host
    manifest = replace(manifest, provenance=Provenance.from_json(trust.definition, aid.filename))
    generated.update(trust.generated)  # share/prebake/sbom.cdx.json
    entries = relocate_files(run, entries, generated, manifest)
    run.say(f"packaging {aid.filename}")
    blocks = block_cache(run.layout.blocks(unit.id))
    path = write_asset(prefix, aid, manifest, dirs.dist, generated=generated, entries=entries,
                       cache=blocks)
    run.log.write(f"# packaging: {blocks.summary()}")
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
    """The steps in order; each recipe is built and guarded before the next one builds on it.
    ``--guards-only`` reuses the stamped build tree (``prebake.bake.scheduler`` refused a
    stale one before any unit ran)."""
    strategies = preflight(run)
    if run.opts.guards_only:
        composed = Composed(before=stamp.composed_before(run.dirs))
    else:
        composed = compose(run)
    guarded_recipes: list[RecipeGuarded] = []
    for recipe in run.unit.recipes:
        strategy = strategies[recipe.name]
        built = (reuse_recipe(run, recipe, strategy) if run.opts.guards_only
                 else build_recipe(run, recipe, strategy))
        guarded = prove_install(run, built, guard_recipe(run, built))
        export_configs(run, guarded)
        guarded_recipes.append(guarded)
    unchanged = guard_unchanged(run, composed, guarded_recipes)
    published = publish(run, attest(run, package(run, unchanged)))
    if not run.unit.per_recipe:
        stamp.save_stage_files(run, unchanged.added)
    return published
