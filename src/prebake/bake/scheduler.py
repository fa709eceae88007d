"""The build's scheduler: units run in parallel threads under a job budget, a unit once its
upstream units are built or skipped, a failed unit blocking its dependents; one build per
workspace at a time (a lock file), every unit's toolchain verified before any command runs,
and ``build --diff``'s publish-after-diffs at the end.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import replace
from functools import partial

from prebake.bake import stamp
from prebake.bake.buildenv import prepare
from prebake.bake.dryrun import dry_run_steps, dry_run_verdict
from prebake.bake.layout import Layout, WorkDirs, work_dirs
from prebake.bake.options import Options
from prebake.bake.process import BuildLog
from prebake.bake.progress import Tracker
from prebake.bake.result import UnitResult, UnitState
from prebake.bake.unit import BreakingDiff, build_unit
from prebake.bake.unitrun import Event, UnitFailed, UnitRun
from prebake.errors import PrebakeError
from prebake.model.workspace import Workspace
from prebake.plan import planner
from prebake.plan.units import Unit
from prebake.sources import SourceCache
from prebake.sources.mirrors import with_mirrors
from prebake.store import open_store
from prebake.store.base import Store, read_manifest
from prebake.toolchain.verify import (
    ToolchainRefused,
    refusals,
    resolved_toolchain,
    verify_platforms,
    with_toolchain_prefix,
)

Emit = Callable[[str, str, str], None]


def plan_units(ws: Workspace, stage: str | None, platforms: Sequence[str] | None
               ) -> tuple[Unit, ...]:
    """The units to build, in build order (platform by platform when several are named).

    One plan for the whole selection: every unit carries its resolved upstream units, so the
    build never plans again.
    """
    return planner.make_plan(ws, stage=stage, platform=list(platforms) if platforms else None
                             ).units


@contextlib.contextmanager
def _workspace_lock(ws: Workspace) -> Iterator[None]:
    """One build per workspace at a time: two would share work dirs and stage files."""
    lock = ws.root / ".prebake" / "build.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "w") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise PrebakeError(f"{ws.root}: another prebake build is running in this "
                               "workspace") from None
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def build(ws: Workspace, units: Sequence[Unit], opts: Options,
          emit: Emit | None = None) -> list[UnitResult]:
    """Run ``units`` (dependency order) and return one result per unit, in the same order.

    Every unit's toolchain is verified first (``prebake.toolchain``): a pin its compiler
    contradicts, a missing compiler or a recipe's unmet minimum refuses the run before any
    command runs, and the units run the commands that were measured.
    """
    if opts.guards_only:
        check_guards_only(ws, units)
    units, refused = _verified(ws, units, opts)
    if opts.dry_run:  # a dry run says what a real run would refuse, and why
        return [dataclasses.replace(r, reason=f"dry run: would refuse: {refused[r.unit]}")
                if r.unit in refused else r for r in _build(ws, units, opts, emit)]
    with _workspace_lock(ws):
        return _build(ws, units, opts, emit)


def check_guards_only(ws: Workspace, units: Sequence[Unit]) -> None:
    """``--guards-only``: refuse (exit 2, nothing written) a unit whose build tree is missing
    or was built from other non-guard inputs than the workspace now asks for."""
    for u in units:
        why = guards_only_refusal(ws, u)
        if why is not None:
            raise PrebakeError(why)


def check_toolchains(ws: Workspace, units: Sequence[Unit], opts: Options) -> None:
    """Refuse now (``ToolchainRefused``) what ``build`` would refuse: before a progress
    display starts, so the refusal is the only line the user sees."""
    _verified(ws, units, opts)


def _verified(ws: Workspace, units: Sequence[Unit], opts: Options
              ) -> tuple[list[Unit], dict[str, str]]:
    platforms = {u.platform.name: u.platform for u in units}
    caller = opts.caller_env or None
    verdicts = verify_platforms(platforms.values(), ws.pins, caller_env=caller)
    lines = refusals([(u.id, u.recipes, u.platform) for u in units], verdicts)
    if lines and not opts.dry_run:
        raise ToolchainRefused("\n".join(r.line for r in lines))
    refused = {uid: r.line for r in lines for uid in r.units}
    return [dataclasses.replace(u, platform=dataclasses.replace(
        u.platform, toolchain=resolved_toolchain(u.platform.toolchain,
                                                 verdicts[u.platform.name])))
            for u in units], refused


def _build(ws: Workspace, units: Sequence[Unit], opts: Options,
           emit: Emit | None = None) -> list[UnitResult]:
    emit = emit or (lambda _u, _s, _m: None)
    # one resolver for the run: parallel units share its index documents
    opts = dataclasses.replace(opts, cache=with_mirrors(opts.cache or SourceCache(), ws))
    store = open_store(ws.default_store, root=ws.root)  # a dry run reads it: what would skip
    if not opts.dry_run and opts.publish and not store.writable:
        raise PrebakeError(f"{ws.default_store}: the default store is read-only")
    cancel = threading.Event()
    by_id = {u.id: u for u in units}
    results: dict[str, UnitResult] = {}
    pending = list(units)
    running: dict[Future[UnitResult], Unit] = {}

    def ready(u: Unit) -> bool:
        return all(d not in by_id or d in results for d in u.deps)

    def blocked_by(u: Unit) -> str | None:
        for d in u.deps:
            r = results.get(d)
            if r is not None and r.state.bad:
                return d
        return None

    with ThreadPoolExecutor(max(1, opts.jobs), thread_name_prefix="unit") as pool:
        try:
            while pending or running:
                for u in list(pending):
                    if (bad := blocked_by(u)) is not None:
                        pending.remove(u)
                        results[u.id] = UnitResult(u.id, UnitState.BLOCKED,
                                                   asset=u.asset.filename,
                                                   input_hash=u.input_hash,
                                                   message=f"not built: {bad} failed")
                        emit(u.id, "blocked", results[u.id].message)
                    elif ready(u) and len(running) < max(1, opts.jobs):
                        pending.remove(u)
                        emit(u.id, "running", "starting")
                        opts.cores.start(u.id)  # {jobs}: cores among the running units
                        running[pool.submit(run_unit, ws, u, opts, store, emit, cancel)] = u
                if not running:
                    if pending:  # plan deps that can never be met: refuse instead of spinning
                        raise PrebakeError("units wait on each other: "
                                           + ", ".join(u.id for u in pending))
                    continue
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for f in done:
                    u = running.pop(f)
                    opts.cores.finish(u.id)
                    r = f.result()
                    results[u.id] = r
                    emit(u.id, r.state, r.message or r.reason)
        except BaseException:
            cancel.set()
            raise
    out = [results[u.id] for u in units]
    if opts.diff and opts.publish and not opts.dry_run:
        out = _publish_after_diffs(store, out, emit)
    return out


def _publish_after_diffs(store: Store, results: Sequence[UnitResult], emit: Emit
                         ) -> list[UnitResult]:
    """``build --diff``: publish the built assets only when no unit's diff is breaking — a
    breaking change anywhere in the build publishes nothing, so a release is never half new."""
    breaking = [r.unit for r in results if r.breaking]
    out = []
    for r in results:
        path = r.to_publish
        if path is None:
            out.append(r)
        elif breaking:
            out.append(replace(r, to_publish=None, reason=(
                f"built, not published: breaking diff in {', '.join(breaking)} "
                "(--allow-breaking publishes anyway)")))
        else:
            emit(r.unit, "running", f"publishing {path.name} to {store.url}")
            try:
                store.publish(path)
            except PrebakeError as exc:
                r = replace(r, state=UnitState.FAILED, message=f"publishing {path.name}: {exc}")
            out.append(replace(r, to_publish=None))
    return out


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
    sink = partial(opts.progress, unit.id) if opts.progress is not None else None
    progress, unread = Tracker.for_unit(layout.timing(unit.id), sink, t0)
    try:
        log.write(f"# prebake build {unit.id}  input hash {unit.input_hash}")
        if unread:
            log.write(f"# {unread}")
        run = UnitRun(ws=ws, unit=unit, opts=opts, store=store, dirs=dirs,
                      env=prepare(ws, unit, opts, dirs), layout=layout, log=log, cache=cache,
                      cancel=cancel, emit=emit, started_on=time.time(), t0=t0,
                      progress=progress)
        published = build_unit(run)
        progress.save()  # for the next build's estimate
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
