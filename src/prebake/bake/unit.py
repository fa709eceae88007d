"""Building one unit, as step functions: compose → build → guard → package → attest → publish.

Each step takes the unit's fixed :class:`UnitRun` (workspace, resolved :class:`Unit`, options,
store, log, folders) plus the typed value the previous step returned, and returns its own
frozen value; a step refuses by raising :class:`UnitFailed` with a message that says what.
:func:`run_unit` chains them and turns the outcome into a :class:`UnitResult`. To add a step
(a toolchain check before ``build_recipe``, another proof in ``guard_recipe``, a pass over
the files in ``package``), insert a function that takes and returns these values.

A *stage unit* (``core/wasm``) builds every recipe of a ``prefix`` stage into one install prefix
that starts as the union of the earlier stages' files, checks that none of those files changed,
and ships the files the stage added as one asset. A *recipe unit* (``onnxruntime/wasm``, stage
``per-recipe``) builds one recipe into its own prefix against a copy of the earlier stages'
prefix (``{deps_prefix}``) and ships that prefix.

Nothing is packaged unless every guard passed, and nothing is published unless packaging
completed; the asset is written atomically, so an interrupted unit leaves no asset behind.
"""

from __future__ import annotations

import fnmatch
import shlex
import shutil
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prebake.bake import commands as cmdline
from prebake.bake import stamp
from prebake.bake.env import dropped
from prebake.bake.guards import guards_record, license_dest, run_guards
from prebake.bake.immutability import Snapshot, compare, snapshot
from prebake.bake.invocation import command_context, command_env
from prebake.bake.layout import Layout, WorkDirs, stage_marker, work_dirs
from prebake.bake.options import Options
from prebake.bake.process import BuildLog, run_logged
from prebake.bake.result import GuardReport, UnitResult, UnitState
from prebake.bake.shipped import dep_libraries, prefix_files
from prebake.digest import file_sha256
from prebake.errors import PrebakeError
from prebake.manifest import Manifest
from prebake.package import cmake, pkgconfig, relocate
from prebake.package.adopt import Adopted, AdoptFailed, adopt_install
from prebake.package.archive import Entry, collect_tree, with_generated, write_asset
from prebake.package.implib import import_libraries
from prebake.package.libs import Library
from prebake.package.manifest import make_manifest
from prebake.package.naming import SHA256_SUFFIX, parse_sha256_line
from prebake.package.version_proof import files_below, summary
from prebake.plan.model import Unit
from prebake.recipes.model import (
    Build,
    Recipe,
    Repackage,
    Strategy,
    strategy_templates,
    template_fields,
)
from prebake.sources import SourceCache, materialize, render_source
from prebake.sources.unpack import extract
from prebake.store.base import Store, read_manifest
from prebake.trust.hooks import UnitTrust, unit_trust
from prebake.workspace.model import Platform, Workspace

if TYPE_CHECKING:
    from prebake.contract.report import Violation

Event = Callable[[str, str, str], None]  # (unit id, state, message)


class UnitFailed(Exception):
    """A unit failed: the message names what, the log holds the details; ``violations`` are
    the contract findings behind a failed guard, for ``--json`` and the table."""

    def __init__(self, message: str, violations: Sequence[Violation] = ()) -> None:
        super().__init__(message)
        self.violations = tuple(violations)


def toolchain_identity(ws: Workspace, platform: Platform) -> dict[str, Any]:
    """What the manifest records about the compiler: its spec, pin, and verified identity."""
    from prebake.toolchain.verify import record

    return record(platform, ws.pins)


# ---- the values the steps pass on ----------------------------------------------------------

@dataclass(frozen=True)
class UnitRun:
    """What every step of one unit reads: fixed for the unit's run, never written by a step."""

    ws: Workspace
    unit: Unit
    opts: Options
    store: Store
    dirs: WorkDirs
    layout: Layout
    log: BuildLog
    cache: SourceCache
    cancel: threading.Event
    emit: Event
    started_on: float  # wall clock, for the provenance statement only
    t0: float  # monotonic, for the log's timestamps

    def say(self, msg: str) -> None:
        self.emit(self.unit.id, "running", msg)
        self.log.write(f"## [{time.monotonic() - self.t0:6.1f}s] {msg}")

    def version(self, recipe: Recipe) -> str:
        return self.ws.pins[recipe.pin]


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


def unbuildable(recipe: Recipe, platform: str) -> str | None:
    """Why a recipe can never build here (no strategy), else ``None``."""
    return _no_strategy(recipe, platform) if recipe.strategy_for(platform) is None else None


def _no_strategy(recipe: Recipe, platform: str) -> str:
    return f"recipe {recipe.name} has no strategy for {platform}"


def _strategy(run: UnitRun, recipe: Recipe) -> Strategy:
    """The recipe's strategy for the unit's platform (preflight refused a unit without one)."""
    strategy = recipe.strategy_for(run.unit.platform.name)
    if strategy is None:
        raise UnitFailed(_no_strategy(recipe, run.unit.platform.name))
    return strategy


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
    from prebake.bake.invocation import host_tool_env
    from prebake.recipes.model import host_tools_used
    from prebake.toolchain.hosttools import HOST_TOOLS

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
            _restore_stage(run, stage, up, files)
        shutil.copytree(files, into, symlinks=True, dirs_exist_ok=True)
    if not dirs.shared_prefix:
        if dirs.prefix.exists():
            shutil.rmtree(dirs.prefix)
        dirs.prefix.mkdir(parents=True)
    before = snapshot(dirs.deps)
    stamp.write_composed(dirs, before)
    return Composed(before=before)


def _restore_stage(run: UnitRun, stage: str, up: Unit | None, files: Path) -> None:
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


# ---- step 2: build (one recipe) --------------------------------------------------------------

def build_recipe(run: UnitRun, recipe: Recipe) -> RecipeBuilt:
    """Put one recipe's outputs (and its licence) into the prefix, in a fresh work folder."""
    strategy = _strategy(run, recipe)
    if run.cancel.is_set():
        raise UnitFailed("cancelled")
    work = run.dirs.recipe(recipe)
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    before = frozenset(prefix_files(run.dirs.prefix))
    if isinstance(strategy, Repackage):
        _repackage(run, recipe, strategy, work)
    else:
        _compile(run, recipe, strategy, work)
    _install_license(recipe, work, run.dirs.prefix)
    installed = frozenset(files_below(run.dirs.prefix) - before)
    stamp.write_built(run.dirs, run.unit, recipe, before, installed)
    return RecipeBuilt(recipe, strategy, work, before, installed)


def reuse_recipe(run: UnitRun, recipe: Recipe) -> RecipeBuilt:
    """``--guards-only``: the recipe's outputs as its last build left them (the stamp, checked
    against the current inputs, says what was in the prefix before it built)."""
    strategy = _strategy(run, recipe)
    run.say(f"{recipe.name}: --guards-only, reusing the build tree in {run.dirs.root}")
    before, installed = stamp.built_files(run.dirs, recipe)
    return RecipeBuilt(recipe, strategy, run.dirs.recipe(recipe), before, installed)


def _fetch_sources(run: UnitRun, recipe: Recipe, work: Path) -> None:
    """Fetch what this unit's strategy uses of the recipe's sources into ``work``."""
    ver = run.version(recipe)
    for src in recipe.fetched_sources(run.unit.platform.name, ver):
        s = render_source(src, ver, run.ws.pins)
        run.say(f"{recipe.name}: fetching {getattr(s, 'url', getattr(s, 'path', ''))}")
        materialize(s, work, recipe.folder, run.cache)


def _compile(run: UnitRun, recipe: Recipe, strategy: Build, work: Path) -> None:
    if "cmake_toolchain" in template_fields(strategy_templates(strategy)):
        write_cmake_toolchain(run)
    _fetch_sources(run, recipe, work)
    ctx = command_context(run.ws, run.unit, run.opts, recipe, work, run.dirs)
    env = command_env(run.unit, run.opts, recipe, strategy, ctx, dirs=run.dirs)
    run.log.env(env, dropped(run.opts.caller_env, env))
    _warm_zig(run, env)
    (work / "build").mkdir(exist_ok=True)
    for i, command in enumerate(strategy.commands, 1):
        argv = cmdline.expand(command, ctx, f"recipe {recipe.name} command {i}")
        run.say(f"{recipe.name}: [{i}/{len(strategy.commands)}] {shlex.join(argv)[:120]}")
        rc = run_logged(argv, cwd=work / "build", env=env, log=run.log, cancel=run.cancel)
        if rc != 0:
            what = "cancelled" if rc == -1 else f"exit status {rc}"
            raise UnitFailed(f"{recipe.name}: command {i} failed ({what}): "
                             f"{shlex.join(argv)}\n--- last lines of {run.log.path} ---\n"
                             + run.log.tail())


def _warm_zig(run: UnitRun, env: Mapping[str, str]) -> None:
    """zig builds its C runtime in the folder of the first link that needs it and records
    that folder in debug info (``prebake.toolchain.zigwarm``): build it from ``/`` first."""
    from prebake.toolchain.families import family_of_argv
    from prebake.toolchain.zigwarm import warm

    tc = run.unit.platform.toolchain
    fam = family_of_argv(tc.cc)
    if fam is None or fam.name != "zig":
        return
    run.say("zig: building the target's C runtime from / (kept out of the build folders)")
    for line in warm(tc.cc, tc.cxx, env):
        run.log.write(f"# zig warm-up: {line}")


def write_cmake_toolchain(run: UnitRun) -> Path:
    """Write the platform's CMake toolchain file (and its wrappers) into the unit's work
    folder, before any source is fetched: a table that cannot make one fails here."""
    from prebake.bake.env import build_env, compiler_launcher
    from prebake.toolchain.cmakefile import ToolchainFileError, for_unit, toolchain_folder

    p, dirs = run.unit.platform, run.dirs
    env = build_env(run.opts.caller_env, platform_env=p.env, unset=p.env_unset)
    try:
        made = for_unit(p, work_root=dirs.root, prefix=dirs.prefix, deps=dirs.deps, env=env,
                        launcher=compiler_launcher(run.opts.caller_env),
                        workspace_root=run.ws.root)
    except ToolchainFileError as exc:
        raise UnitFailed(str(exc)) from None
    path = made.write(toolchain_folder(dirs.root))
    run.log.write(f"# CMake toolchain file {path}:\n{made.rendered()}")
    return path


def _repackage(run: UnitRun, recipe: Recipe, strategy: Repackage, work: Path) -> None:
    ver = run.version(recipe)
    prefix = run.dirs.prefix
    urls = [u.format(version=ver) for u in (strategy.url, *strategy.mirrors)]
    run.say(f"{recipe.name}: downloading {urls[0]}")
    archive = run.cache.fetch(urls, strategy.sha256, run.log.write, size=strategy.size)
    run.log.write(f"# {urls[0]}: sha256 {strategy.sha256} verified")
    upstream = extract(archive, work / "upstream")
    filled = _place(run, upstream, strategy.layout)
    if strategy.source_layout:
        _fetch_sources(run, recipe, work)
        for dest, ok in _place(run, work, strategy.source_layout).items():
            filled[dest] = filled.get(dest, False) or ok
    layouts = {**strategy.layout, **strategy.source_layout}
    for dest, ok in filled.items():  # globs with one folder are alternatives: one must match
        if not ok:
            pats = [p for p, d in layouts.items() if d == dest]
            raise UnitFailed(f"{recipe.name}: nothing in {urls[0]} or its sources matches "
                             f"{' or '.join(map(repr, pats))} (for {dest}/)")
    for link, target in strategy.links.items():
        path = prefix / link
        if not path.exists() and not path.is_symlink():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.symlink_to(target.format(version=ver))
            run.log.write(f"# {link} -> {target.format(version=ver)}")
        if not path.exists():  # a dangling link: the archive is not the pinned release
            held = sorted(p.name for p in path.parent.iterdir() if not p.is_symlink())
            raise UnitFailed(f"{recipe.name}: {urls[0]} has no {path.parent.relative_to(prefix)}"
                             f"/{path.readlink()} for the link {link} (it holds "
                             f"{', '.join(held) or 'nothing there'}; expected {ver})")
    for dll, outputs in strategy.import_libs.items():
        for line in import_libraries(prefix / dll, [prefix / o for o in outputs]):
            run.log.write(f"# {line}")


def _place(run: UnitRun, root: Path, layout: Mapping[str, str]) -> dict[str, bool]:
    """Copy what each glob matches below ``root`` into its prefix folder; which folders got
    something (the caller fails a folder that none of its alternatives filled)."""
    prefix = run.dirs.prefix
    filled: dict[str, bool] = {}
    for pattern, dest in layout.items():
        matches = sorted(p for p in root.rglob("*")
                         if fnmatch.fnmatchcase(p.relative_to(root).as_posix(), pattern))
        filled[dest] = filled.get(dest, False) or bool(matches)
        for m in matches:
            if any(parent in matches for parent in m.parents):
                continue  # inside a folder copied whole
            target = prefix / dest / m.name
            target.parent.mkdir(parents=True, exist_ok=True)
            if m.is_symlink():
                target.unlink(missing_ok=True)
                target.symlink_to(str(m.readlink()))
            elif m.is_dir():
                shutil.copytree(m, target, symlinks=True, dirs_exist_ok=True)
            else:
                shutil.copyfile(m, target)
            run.log.write(f"# {m.relative_to(root)} -> {target.relative_to(prefix)}")
    return filled


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
    recipes = run.ws.recipes
    dep_libs = dep_libraries(recipes, recipe, p.name, dirs.deps)
    outcome = run_guards(recipe, p, dirs.prefix, built.work, run.log, dep_libs=dep_libs,
                         include_dirs=[] if dirs.shared_prefix else [dirs.deps / "include"],
                         before=built.before)
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
    p = run.unit.platform
    own_cmake = guarded.adopted is None or guarded.adopted.generate_cmake
    files = {
        **(cmake.generated_files(recipe.name, ver, outcome.libs, outcome.link_order,
                                 arch=p.arch, cxx=outcome.cxx, requires=req)
           if own_cmake else {}),
        **pkgconfig.generated_files(recipe.name, ver, outcome.libs, outcome.link_order,
                                    requires=req, os=p.os),
    }
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
    entries = _entries(unit, prefix, guarded.added)
    libs: list[Library] = [lib for _r, o in outcomes for lib in o.libs]
    order = _combined_order(outcomes, prefix)
    cxx = any(o.cxx for _r, o in outcomes)
    generated: dict[str, bytes] = {}
    names = {r.name for r, _o in outcomes}
    req = sorted({d for r, _o in outcomes for d in r.deps if d not in names
                  and d in ws.recipes})
    if aid.name not in names:
        generated.update(cmake.generated_files(aid.name, aid.version, libs, order,
                                               arch=unit.platform.arch, cxx=cxx, requires=req))
        generated.update(pkgconfig.generated_files(aid.name, aid.version, libs, order,
                                                   requires=req, os=unit.platform.os))
    settings = {r.name: _build_settings(run, r) for r, _o in outcomes}
    manifest = make_manifest(
        aid, input_hash=unit.input_hash,
        toolchain=toolchain_identity(ws, unit.platform),
        facts=[f for _r, o in outcomes for f in o.facts], link_order=order,
        recipes=[{"name": r.name, "version": ws.pins[r.pin],
                  **({"public_symbols": list(r.outputs.public_symbols)}
                     if r.outputs.public_symbols else {}),
                  **({"build_settings": settings[r.name]} if settings[r.name] else {})}
                 for r, _o in outcomes],
        guards={**guards_record(unit.platform, [o for _r, o in outcomes]),
                "version": summary([(g.recipe.name, g.adopted.proof)
                                    for g in guarded.recipes if g.adopted is not None])},
        inputs=unit.inputs,
    )
    trust = unit_trust(ws, unit, manifest.toolchain.to_json(), dirs.root, run.started_on,
                       dirs.dist, settings)
    manifest = replace(manifest, provenance=trust.definition)  # deterministic: no times, no host
    generated.update(trust.generated)  # share/prebake/sbom.cdx.json
    entries = relocate_files(run, entries, generated, manifest)
    run.say(f"packaging {aid.filename}")
    path = write_asset(prefix, aid, manifest, dirs.dist, generated=generated, entries=entries)
    digest = (dirs.dist / aid.sha256_name).read_text().split()[0]
    return Packaged(path, digest, manifest, trust)


def _build_settings(run: UnitRun, recipe: Recipe) -> dict[str, str]:
    """The CMake cache entries the recipe records (``Build.record``), read from its build:
    the manifest shows them, and the SBOM lists an optional component only where they
    show its option on."""
    from prebake.package.cmakecache import CacheError, recorded

    strategy = _strategy(run, recipe)
    if not isinstance(strategy, Build) or not strategy.record:
        return {}
    ctx = command_context(run.ws, run.unit, run.opts, recipe, run.dirs.recipe(recipe),
                          run.dirs)
    path = Path(ctx.fill(strategy.cmake_cache, f"recipe {recipe.name} cmake_cache"))
    try:
        settings = recorded(path, strategy.record)
    except CacheError as exc:
        raise UnitFailed(f"{recipe.name}: {exc}") from None
    run.log.write("# build settings (CMake cache): "
                  + ", ".join(f"{k}={v}" for k, v in settings.items()))
    return dict(settings)


def relocate_files(run: UnitRun, entries: list[Entry], generated: Mapping[str, bytes],
                   manifest: Manifest) -> list[Entry]:
    """Rewrite the install files prebake knows to be relative to their own folder, then
    refuse the asset if any file it would ship still names the workspace, the unit's work
    folder or its prefix (``prebake.package.relocate``)."""
    from prebake import jsonio

    dirs = run.dirs
    paths = relocate.BuildPaths.of(dirs.prefix, dirs.root, run.ws.root)
    done = relocate.rewrite_install(dirs.prefix, [e.path for e in entries if e.kind == "file"],
                                    paths)
    for rel in done.changed:
        run.log.write(f"# relocated {rel}: build prefix -> relative to the file")
    for rel in done.dropped:
        run.log.write(f"# dropped {rel}: a libtool archive names the build machine's libdir")
    gone = set(done.dropped)
    kept = [e for e in entries if e.path not in gone]
    manifest_json = jsonio.dumps(manifest.to_json()).encode()
    shipped = with_generated(kept, {**generated, "share/prebake/manifest.json": manifest_json})
    leaks = relocate.scan(shipped, paths)
    if leaks:
        raise UnitFailed(relocate.render_leaks(run.unit.id, leaks))
    return kept


def _entries(unit: Unit, prefix: Path, added: Sequence[str]) -> list[Entry]:
    """A recipe unit ships its whole prefix; a stage unit the files it added (and their dirs)."""
    if unit.per_recipe:
        return collect_tree(prefix)
    keep = set(added)
    return _prune_dirs([e for e in collect_tree(prefix) if e.kind == "dir" or e.path in keep])


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
        from prebake.diff import build_summary

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


def save_stage_files(run: UnitRun, guarded: Guarded) -> None:
    """Keep the files a stage unit added, for later stages to build upon (only a stage that
    passed everything is built upon)."""
    unit, prefix = run.unit, run.dirs.prefix
    dest = run.layout.stage_files(unit.platform.name, unit.stage.name)
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    for rel in guarded.added:
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
        save_stage_files(run, guarded)
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
    from prebake.toolchain.verify import with_toolchain_prefix

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
        from prebake.bake.dryrun import dry_run_steps, dry_run_verdict

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


# ---- helpers ----------------------------------------------------------------------------------

def _prune_dirs(entries: list[Entry]) -> list[Entry]:
    """Keep only folders that hold a kept file (a stage ships what it added, not empty dirs)."""
    keep = {e.path for e in entries if e.kind != "dir"}
    parents = {p for path in keep for p in _parents(path)}
    return [e for e in entries if e.kind != "dir" or e.path in parents]


def _parents(path: str) -> list[str]:
    parts = path.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def _combined_order(outcomes: Sequence[tuple[Recipe, GuardReport]], prefix: Path
                    ) -> list[list[str]]:
    """The link order across every library the unit ships (one recipe: its own order)."""
    static = [lib for _r, o in outcomes for lib in o.libs if lib.kind == "static"]
    if len(outcomes) == 1 or len(static) < 2:
        return [g for _r, o in outcomes for g in o.link_order] or [
            [lib.path] for _r, o in outcomes for lib in o.libs]
    from prebake.link.order import compute_link_order

    order = compute_link_order([prefix / lib.path for lib in static])
    groups = [[Path(p).relative_to(prefix).as_posix() for p in g] for g in order.groups]
    shared = [[lib.path] for _r, o in outcomes for lib in o.libs if lib.kind != "static"]
    return groups + shared
