"""Building one unit: sources → commands (or repackage) → guards → package → publish.

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
import os
import shlex
import shutil
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prebake.bake import commands as cmdline
from prebake.bake.env import build_env, compiler_launcher, dropped, launcher_env, with_launcher
from prebake.bake.guards import GuardOutcome, guards_record, license_dest, run_guards
from prebake.bake.immutability import compare, snapshot
from prebake.bake.process import BuildLog, run_logged
from prebake.errors import PrebakeError
from prebake.package import cmake, pkgconfig
from prebake.package.archive import Entry, collect_tree, write_asset
from prebake.package.libs import Library
from prebake.package.manifest import make_manifest
from prebake.package.naming import SHA256_SUFFIX, AssetId, parse_sha256_line
from prebake.plan.hashing import version_line
from prebake.recipes.model import (
    UNVERIFIED_SHA256_PREFIX,
    Build,
    Recipe,
    Repackage,
)
from prebake.sources import SourceCache, describe, materialize, render_source
from prebake.sources.unpack import extract
from prebake.store.base import file_sha256, read_manifest
from prebake.workspace.model import Platform, Workspace

Event = Callable[[str, str, str], None]  # (unit id, state, message)


class UnitFailed(Exception):
    """A unit failed: the message names what, the log holds the details."""


@dataclass
class Options:
    jobs: int = 1  # parallel units
    force: bool = False
    dry_run: bool = False
    caller_env: Mapping[str, str] = field(default_factory=dict)
    cache: SourceCache | None = None
    publish: bool = True
    diff: bool = False  # diff each new asset against the store's current one, before publishing

    @property
    def threads(self) -> int:
        """The ``{jobs}`` a unit's build tool gets: the cores shared by parallel units."""
        return max(1, (os.cpu_count() or 1) // max(1, self.jobs))


@dataclass
class UnitResult:
    unit: str
    state: str  # built | skipped | failed | blocked | planned
    asset: str | None = None
    sha256: str | None = None
    input_hash: str = ""
    seconds: float = 0.0
    log: str | None = None
    message: str = ""
    reason: str = ""
    dry_run: list[dict[str, Any]] = field(default_factory=list)
    diff: dict[str, Any] | None = None
    diff_markdown: str = ""
    want_diff: bool = False

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "unit": self.unit, "state": self.state, "asset": self.asset, "sha256": self.sha256,
            "input_hash": self.input_hash, "seconds": round(self.seconds, 3), "log": self.log,
            "message": self.message, "reason": self.reason,
        }
        if self.dry_run:
            out["steps"] = self.dry_run
        if self.want_diff:
            out["diff"] = self.diff
        return out


def slug(unit_id: str) -> str:
    return unit_id.replace("/", "--")


class Layout:
    """Where a workspace's build state lives (``<root>/.prebake``)."""

    def __init__(self, root: Path) -> None:
        self.base = root / ".prebake"

    def work(self, platform: str, name: str) -> Path:
        return self.base / "work" / platform / name

    def stage_files(self, platform: str, stage: str) -> Path:
        """The files a stage added to the prefix (what its asset ships)."""
        return self.base / "stages" / platform / stage

    def log(self, unit_id: str) -> Path:
        return self.base / "logs" / f"{slug(unit_id)}.log"

    def dist(self, platform: str) -> Path:
        return self.base / "dist" / platform


@dataclass
class UnitSpec:
    """What the scheduler hands a builder: the plan's unit resolved against the workspace."""

    id: str
    stage: str
    recipes: tuple[Recipe, ...]
    platform: Platform
    input_hash: str
    asset: AssetId
    per_recipe: bool
    upstream: tuple[str, ...]  # earlier stages whose prefix this unit builds against
    # stage -> (its asset, its unit's input hash) on this platform
    upstream_assets: Mapping[str, tuple[AssetId, str]] = field(default_factory=dict)
    deps: tuple[str, ...] = ()  # unit ids that must be built (or skipped) first
    inputs: Mapping[str, str] = field(default_factory=dict)  # the plan's hash inputs (--explain)


def toolchain_identity(ws: Workspace, platform: Platform) -> dict[str, Any]:
    """What the manifest records about the compiler: its spec, pin, and ``--version`` line."""
    tc = platform.toolchain
    spec = dict(tc.spec)
    # the plan's runner: a scratch working folder, a clean environment, failures as text
    version = version_line([*tc.cxx, "--version"]) if tc.cxx else None
    return {
        "cc": shlex.split(spec.get("cc", shlex.join(tc.cc))),
        "cxx": shlex.split(spec.get("cxx", shlex.join(tc.cxx))),
        "ar": shlex.split(spec.get("ar", shlex.join(tc.ar))),
        "pin": tc.pin,
        "pin_version": ws.pins.get(tc.pin) if tc.pin else None,
        "version": version,
    }


class UnitBuilder:
    """Runs one unit. Stateless between units apart from the workspace's ``.prebake`` folder."""

    def __init__(self, ws: Workspace, spec: UnitSpec, opts: Options, store: Any,
                 emit: Event, cancel: threading.Event) -> None:
        self.ws = ws
        self.spec = spec
        self.opts = opts
        self.store = store
        self.emit = emit
        self.cancel = cancel
        self.layout = Layout(ws.root)
        self.cache = opts.cache or SourceCache()
        self.steps: list[dict[str, Any]] = []
        self._log: BuildLog | None = None
        self._t0 = time.monotonic()
        self.started_on = time.time()  # wall clock, for the provenance sidecar only

    # ---- helpers -------------------------------------------------------------------------
    @property
    def log(self) -> BuildLog:
        assert self._log is not None
        return self._log

    def _say(self, msg: str) -> None:
        self.emit(self.spec.id, "running", msg)
        if self._log is not None:
            self.log.write(f"## [{time.monotonic() - self._t0:6.1f}s] {msg}")

    def _context(self, recipe: Recipe, work: Path, prefix: Path, deps: Path) -> cmdline.Context:
        p = self.spec.platform
        return cmdline.Context(
            values={"src": str(work / "src"), "build": str(work / "build"),
                    "prefix": str(prefix), "deps_prefix": str(deps),
                    "jobs": str(self.opts.threads), "version": self.ws.pins[recipe.pin],
                    "platform": p.name, "os": p.os, "arch": p.arch},
            pins=self.ws.pins,
            argv={"cc": with_launcher(p.toolchain.cc, self._launcher),
                  "cxx": with_launcher(p.toolchain.cxx, self._launcher), "ar": p.toolchain.ar},
        )

    @property
    def _launcher(self) -> str | None:
        return compiler_launcher(self.opts.caller_env)

    def _env(self, recipe: Recipe, strategy: Build | None, ctx: cmdline.Context
             ) -> dict[str, str]:
        p = self.spec.platform
        recipe_env = {k: ctx.fill(v, f"recipe {recipe.name} env {k}")
                      for k, v in (strategy.env if strategy else {}).items()}
        return build_env(self.opts.caller_env, platform_env=p.env, recipe_env=recipe_env,
                         unset=[*p.env_unset, *(strategy.env_unset if strategy else ())],
                         extra=launcher_env(p.toolchain.cc, self._launcher) or None)

    # ---- entry point ---------------------------------------------------------------------
    def run(self) -> UnitResult:
        spec = self.spec
        res = UnitResult(spec.id, "failed", asset=spec.asset.filename, input_hash=spec.input_hash,
                         want_diff=self.opts.diff)
        self._result = res
        t0 = time.monotonic()
        if self.opts.dry_run:
            self._dry_run()
            res.state, res.dry_run, res.reason = "planned", self.steps, self._dry_run_verdict()
            return res
        if not self.opts.force:
            m = read_manifest(self.store, spec.asset)
            if m is not None and m.get("input_hash") == spec.input_hash:
                res.state, res.reason = "skipped", "input hash matches the asset in the store"
                res.seconds = time.monotonic() - t0
                return res
            res.reason = ("no asset in the store" if m is None
                          else "input hash differs from the asset in the store")
        else:
            res.reason = "--force"
        logpath = self.layout.log(spec.id)
        self._log = BuildLog(logpath)
        res.log = str(logpath)
        try:
            self.log.write(f"# prebake build {spec.id}  input hash {spec.input_hash}")
            path, digest = self._build()
            res.state, res.sha256 = "built", digest
            res.asset = path.name
        except UnitFailed as exc:
            res.message = str(exc)
            self.log.write(f"# FAILED: {exc}")
        except PrebakeError as exc:
            res.message = str(exc)
            self.log.write(f"# FAILED: {exc}")
        except Exception as exc:  # a bug or a missing module still fails only this unit, loudly
            res.message = f"internal error: {type(exc).__name__}: {exc}"
            self.log.write(f"# FAILED: {res.message}")
        finally:
            self.log.close()
            res.seconds = time.monotonic() - t0
        return res

    # ---- the build -----------------------------------------------------------------------
    def _compose(self, into: Path) -> None:
        """Fill ``into`` with the files of every upstream stage (from builds or the store)."""
        if into.exists():
            shutil.rmtree(into)
        into.mkdir(parents=True)
        for stage in self.spec.upstream:
            files = self.layout.stage_files(self.spec.platform.name, stage)
            want = self.spec.upstream_assets.get(stage, (None, ""))[1]
            marker = _marker(files)
            if not files.is_dir() or not marker.is_file() or marker.read_text().strip() != want:
                self._restore_stage(stage, files)
            shutil.copytree(files, into, symlinks=True, dirs_exist_ok=True)

    def _restore_stage(self, stage: str, files: Path) -> None:
        """An upstream stage not built here (or built from other inputs): take its files from
        its asset in the store, which must have been built from the current inputs."""
        if stage not in self.spec.upstream_assets:
            raise UnitFailed(f"stage {stage} has no files here and no asset to restore them from")
        aid, input_hash = self.spec.upstream_assets[stage]
        manifest = read_manifest(self.store, aid)
        if manifest is not None and manifest.get("input_hash") != input_hash:
            raise UnitFailed(f"{self.spec.id} builds on stage {stage}, whose asset "
                             f"{aid.filename} in {self.store.url} was built from other inputs "
                             f"(build --stage {stage} first)")
        self._say(f"restoring stage {stage} from {aid.filename} in the store")
        tmp = files.with_name(files.name + ".download")
        tmp.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.store.download(aid, tmp)
        except PrebakeError as exc:
            raise UnitFailed(
                f"{self.spec.id} builds on stage {stage}, which was not built here and whose "
                f"asset {aid.filename} is not in {self.store.url} (build --stage {stage} "
                f"first): {exc}") from None
        want = self.store.read_sidecar(aid, SHA256_SUFFIX)
        got = file_sha256(tmp)
        if want is None or parse_sha256_line(want.decode(), aid.filename) != got:
            tmp.unlink(missing_ok=True)
            raise UnitFailed(f"{aid.filename} from {self.store.url} does not match its "
                             f".sha256 sidecar; not building on it")
        try:
            shutil.rmtree(files.with_name(files.name + ".new"), ignore_errors=True)
            extract(tmp, files.with_name(files.name + ".new"))
            shutil.rmtree(files, ignore_errors=True)
            files.with_name(files.name + ".new").rename(files)
            _marker(files).write_text(input_hash + "\n")
        finally:
            tmp.unlink(missing_ok=True)

    def _preflight(self) -> None:
        """Refuse before any work what can never succeed: no strategy, an unverified pin."""
        pname = self.spec.platform.name
        for recipe in self.spec.recipes:
            strategy = recipe.strategy_for(pname)
            if strategy is None:
                raise UnitFailed(f"recipe {recipe.name} has no strategy for {pname}")
            if isinstance(strategy, Repackage) and not strategy.verified:
                raise UnitFailed(
                    f"{recipe.name}: the {pname} archive's sha256 is a placeholder "
                    f"({strategy.sha256}); pin the real digest first")

    def _build(self) -> tuple[Path, str]:
        spec = self.spec
        pname = spec.platform.name
        self._preflight()
        root = self.layout.work(pname, spec.stage if not spec.per_recipe
                                else f"{spec.stage}-{spec.recipes[0].name}")
        if spec.per_recipe:
            deps = root / "deps"
            prefix = root / "prefix"
            self._compose(deps)
            if prefix.exists():
                shutil.rmtree(prefix)
            prefix.mkdir(parents=True)
            guarded_tree = deps
        else:
            prefix = deps = root / "prefix"
            self._compose(prefix)
            guarded_tree = prefix
        before = snapshot(guarded_tree)
        outcomes: list[tuple[Recipe, GuardOutcome]] = []
        for recipe in spec.recipes:
            if self.cancel.is_set():
                raise UnitFailed("cancelled")
            outcomes.append((recipe, self._build_recipe(recipe, root / recipe.name, prefix,
                                                        deps)))
        diff = compare(before, snapshot(guarded_tree))
        if not diff.ok:
            raise UnitFailed(diff.render(spec.stage if not spec.per_recipe else
                                         f"{spec.stage} ({spec.recipes[0].name})"))
        if spec.per_recipe:
            entries = collect_tree(prefix)
        else:
            entries = [e for e in collect_tree(prefix) if e.kind == "dir" or e.path in diff.added]
            entries = _prune_dirs(entries)
        result = self._package(entries, prefix, outcomes)
        if not spec.per_recipe:  # only a stage that passed everything is built upon later
            self._save_stage_files(prefix, diff.added)
        return result

    def _save_stage_files(self, prefix: Path, added: Sequence[str]) -> None:
        dest = self.layout.stage_files(self.spec.platform.name, self.spec.stage)
        tmp = dest.with_name(dest.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        for rel in added:
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            src = prefix / rel
            if src.is_symlink():
                (tmp / rel).symlink_to(str(src.readlink()))
            else:
                shutil.copy2(src, tmp / rel)
        tmp.mkdir(parents=True, exist_ok=True)
        _marker(dest).unlink(missing_ok=True)
        shutil.rmtree(dest, ignore_errors=True)
        tmp.rename(dest)
        _marker(dest).write_text(self.spec.input_hash + "\n")

    def _build_recipe(self, recipe: Recipe, work: Path, prefix: Path, deps: Path
                      ) -> GuardOutcome:
        p = self.spec.platform
        strategy = recipe.strategy_for(p.name)
        if strategy is None:
            raise UnitFailed(f"recipe {recipe.name} has no strategy for {p.name}")
        if work.exists():
            shutil.rmtree(work)
        work.mkdir(parents=True)
        if isinstance(strategy, Repackage):
            self._repackage(recipe, strategy, work, prefix)
        else:
            self._compile(recipe, strategy, work, prefix, deps)
        self._install_license(recipe, work, prefix)
        self._say(f"{recipe.name}: guards (inspect, contract, link test)")
        dep_libs = [deps / lib for d in recipe.deps if d in self.ws.recipes
                    for lib in self.ws.recipes[d].outputs.libs_for(p.name)
                    if (deps / lib).exists()]
        outcome = run_guards(recipe, p, prefix, work, self.log, dep_libs=dep_libs,
                             include_dirs=[deps / "include"] if deps != prefix else [])
        if not outcome.ok:
            raise UnitFailed("\n".join(outcome.failures))
        self._write_recipe_configs(recipe, outcome, prefix)
        return outcome

    def _install_license(self, recipe: Recipe, work: Path, prefix: Path) -> None:
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

    def _compile(self, recipe: Recipe, strategy: Build, work: Path, prefix: Path,
                 deps: Path) -> None:
        ver = self.ws.pins[recipe.pin]
        for src in recipe.sources:
            s = render_source(src, ver, self.ws.pins)
            self._say(f"{recipe.name}: fetching {getattr(s, 'url', getattr(s, 'path', ''))}")
            materialize(s, work, recipe.folder, self.cache)
        ctx = self._context(recipe, work, prefix, deps)
        env = self._env(recipe, strategy, ctx)
        self.log.env(env, dropped(self.opts.caller_env, env))
        (work / "build").mkdir(exist_ok=True)
        for i, command in enumerate(strategy.commands, 1):
            argv = cmdline.expand(command, ctx, f"recipe {recipe.name} command {i}")
            self._say(f"{recipe.name}: [{i}/{len(strategy.commands)}] {shlex.join(argv)[:120]}")
            rc = run_logged(argv, cwd=work / "build", env=env, log=self.log, cancel=self.cancel)
            if rc != 0:
                what = "cancelled" if rc == -1 else f"exit status {rc}"
                raise UnitFailed(f"{recipe.name}: command {i} failed ({what}): "
                                 f"{shlex.join(argv)}\n--- last lines of {self.log.path} ---\n"
                                 + self.log.tail())

    def _repackage(self, recipe: Recipe, strategy: Repackage, work: Path, prefix: Path) -> None:
        if strategy.sha256.startswith(UNVERIFIED_SHA256_PREFIX):
            raise UnitFailed(f"{recipe.name}: the {self.spec.platform.name} archive's sha256 is "
                             f"a placeholder ({strategy.sha256}); pin the real digest first")
        ver = self.ws.pins[recipe.pin]
        urls = [u.format(version=ver) for u in (strategy.url, *strategy.mirrors)]
        self._say(f"{recipe.name}: downloading {urls[0]}")
        self.cache.log = self.log.write
        archive = self.cache.fetch(urls, strategy.sha256)
        self.log.write(f"# {urls[0]}: sha256 {strategy.sha256} verified")
        upstream = extract(archive, work / "upstream")
        for pattern, dest in strategy.layout.items():
            matches = sorted(p for p in upstream.rglob("*")
                             if fnmatch.fnmatchcase(p.relative_to(upstream).as_posix(), pattern))
            if not matches:
                raise UnitFailed(f"{recipe.name}: nothing in {urls[0]} matches {pattern!r}")
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
                self.log.write(f"# {m.relative_to(upstream)} -> {target.relative_to(prefix)}")

    def _write_recipe_configs(self, recipe: Recipe, outcome: GuardOutcome, prefix: Path) -> None:
        """CMake and pkg-config files per recipe, into the prefix (kept if the recipe made its
        own), so later recipes and stages can ``find_package`` what earlier ones installed."""
        ver = self.ws.pins[recipe.pin]
        req = [d for d in recipe.deps if d in self.ws.recipes]
        files = {
            **cmake.generated_files(recipe.name, ver, outcome.libs, outcome.link_order,
                                    arch=self.spec.platform.arch, cxx=outcome.cxx, requires=req),
            **pkgconfig.generated_files(recipe.name, ver, outcome.libs, outcome.link_order,
                                        requires=req, os=self.spec.platform.os),
        }
        for rel, data in files.items():
            p = prefix / rel
            if not p.exists():
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_bytes(data)

    def _package(self, entries: list[Entry], prefix: Path,
                 outcomes: Sequence[tuple[Recipe, GuardOutcome]]) -> tuple[Path, str]:
        spec = self.spec
        aid = spec.asset
        libs: list[Library] = [lib for _r, o in outcomes for lib in o.libs]
        order = _combined_order(outcomes, prefix)
        cxx = any(o.cxx for _r, o in outcomes)
        generated: dict[str, bytes] = {}
        names = {r.name for r, _o in outcomes}
        req = sorted({d for r, _o in outcomes for d in r.deps if d not in names
                      and d in self.ws.recipes})
        if aid.name not in names:
            generated.update(cmake.generated_files(aid.name, aid.version, libs, order,
                                                   arch=spec.platform.arch, cxx=cxx,
                                                   requires=req))
            generated.update(pkgconfig.generated_files(aid.name, aid.version, libs, order,
                                                       requires=req, os=spec.platform.os))
        manifest = make_manifest(
            aid, input_hash=spec.input_hash,
            toolchain=toolchain_identity(self.ws, spec.platform),
            facts=[f for _r, o in outcomes for f in o.facts], link_order=order,
            recipes=[{"name": r.name, "version": self.ws.pins[r.pin]} for r, _o in outcomes],
            guards=guards_record(spec.platform, [o for _r, o in outcomes]),
            inputs=spec.inputs,
        )
        from prebake.trust.hooks import unit_trust

        work_root = self.layout.work(spec.platform.name, spec.stage if not spec.per_recipe
                                     else f"{spec.stage}-{spec.recipes[0].name}")
        trust = unit_trust(self.ws, spec, manifest["toolchain"], work_root, self.started_on)
        manifest["provenance"] = trust.definition  # deterministic: no times, no host
        generated.update(trust.generated)  # share/prebake/sbom.cdx.json
        self._say(f"packaging {aid.filename}")
        out_dir = self.layout.dist(spec.platform.name)
        path = write_asset(prefix, aid, manifest, out_dir, generated=generated, entries=entries)
        digest = (out_dir / aid.sha256_name).read_text().split()[0]
        trust.finish(path, digest)  # <asset>.intoto.json: the statement with builder and times
        if self.opts.diff:
            from prebake.diff import build_summary

            self._say(f"diffing {aid.filename} against {self.store.url}")
            result, markdown = build_summary(path, self.store)
            self._result.diff = result.to_json() if result is not None else None
            self._result.diff_markdown = markdown
        if self.opts.publish:
            self._say(f"publishing {aid.filename} to {self.store.url}")
            self.store.publish(path)
        return path, digest

    # ---- dry run -------------------------------------------------------------------------
    def _dry_run_verdict(self) -> str:
        """What a real run would do with this unit, so a dry run does not overstate the work."""
        if self.opts.force:
            return "dry run: would build (--force)"
        try:
            m = read_manifest(self.store, self.spec.asset) if self.store is not None else None
        except (PrebakeError, OSError) as exc:
            return f"dry run: would build unless the store has it (store not asked: {exc})"
        if m is not None and m.get("input_hash") == self.spec.input_hash:
            return "dry run: would skip (input hash matches the asset in the store)"
        return "dry run: would build (" + ("no asset in the store" if m is None
                                           else "input hash differs from the stored asset") + ")"

    def _dry_run(self) -> None:
        spec = self.spec
        pname = spec.platform.name
        root = self.layout.work(pname, spec.stage if not spec.per_recipe
                                else f"{spec.stage}-{spec.recipes[0].name}")
        prefix = root / "prefix"
        deps = root / "deps" if spec.per_recipe else prefix
        for recipe in spec.recipes:
            work = root / recipe.name
            strategy = recipe.strategy_for(pname)
            step: dict[str, Any] = {"recipe": recipe.name, "platform": pname}
            if isinstance(strategy, Repackage):
                ver = self.ws.pins[recipe.pin]
                step["strategy"] = "repackage"
                step["download"] = [u.format(version=ver)
                                    for u in (strategy.url, *strategy.mirrors)]
                step["sha256"] = strategy.sha256
                step["verified"] = not strategy.sha256.startswith(UNVERIFIED_SHA256_PREFIX)
                step["layout"] = dict(strategy.layout)
            elif isinstance(strategy, Build):
                ver = self.ws.pins[recipe.pin]
                ctx = self._context(recipe, work, prefix, deps)
                step["strategy"] = "build"
                step["sources"] = [line for s in recipe.sources for line in
                                   describe(render_source(s, ver, self.ws.pins), work,
                                            recipe.folder, self.cache)]
                step["cwd"] = str(work / "build")
                step["env"] = self._env(recipe, strategy, ctx)
                step["commands"] = [cmdline.expand(c, ctx, f"recipe {recipe.name} command {i}")
                                    for i, c in enumerate(strategy.commands, 1)]
            else:
                step["strategy"] = None
            self.steps.append(step)


def _marker(stage_files: Path) -> Path:
    """Records which input hash a stage's saved files were built from."""
    return stage_files.with_name(stage_files.name + ".input_hash")


def _prune_dirs(entries: list[Entry]) -> list[Entry]:
    """Keep only folders that hold a kept file (a stage ships what it added, not empty dirs)."""
    keep = {e.path for e in entries if e.kind != "dir"}
    parents = {p for path in keep for p in _parents(path)}
    return [e for e in entries if e.kind != "dir" or e.path in parents]


def _parents(path: str) -> list[str]:
    parts = path.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def _combined_order(outcomes: Sequence[tuple[Recipe, GuardOutcome]], prefix: Path
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
