"""``prebake build``'s library API: the plan's units as a DAG, run under a job budget.

Independent units (other platforms, recipes of a per-recipe stage) run in parallel; a unit
starts once every unit it depends on has been built or skipped. A failed unit stops its
dependents (reported as ``blocked``) while unrelated units finish. Ctrl-C cancels the units in
flight (their process groups are killed) and nothing half-written is left: assets and cache
entries only ever appear through atomic renames.
"""

from __future__ import annotations

import contextlib
import fcntl
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

from prebake.bake.unit import Options, UnitBuilder, UnitResult, UnitSpec
from prebake.errors import PrebakeError
from prebake.package.naming import AssetId
from prebake.recipes.model import Recipe
from prebake.store import open_store
from prebake.workspace.model import Workspace

__all__ = ["Options", "UnitResult", "UnitSpec", "build", "resolve_units"]

Emit = Callable[[str, str, str], None]


def _recipe(ws: Workspace, ref: Any) -> Recipe:
    if isinstance(ref, Recipe):
        return ref
    return ws.recipes[str(ref)]


def _platform_name(ref: Any) -> str:
    return str(getattr(ref, "name", ref))


def resolve_units(ws: Workspace, stage: str | None, platforms: Sequence[str] | None
                  ) -> list[UnitSpec]:
    """The plan's units (in build order) resolved to recipes, platforms and asset names."""
    from prebake.plan import asset_for, make_plan

    names = list(platforms) if platforms else [None]
    specs: list[UnitSpec] = []
    for pname in names:
        plan = make_plan(ws, stage=stage, platform=pname)
        for unit in plan.units:
            p = ws.platforms[_platform_name(unit.platform)]
            per_recipe = unit.recipe is not None
            recipes = tuple(_recipe(ws, r) for r in unit.recipes)
            upstream = ws.upstream_stages(unit.stage)
            specs.append(UnitSpec(
                id=unit.id, stage=unit.stage, recipes=recipes, platform=p,
                input_hash=unit.input_hash, asset=asset_for(unit), per_recipe=per_recipe,
                upstream=upstream, upstream_assets=_upstream_assets(ws, upstream, p.name),
                deps=tuple(unit.deps), inputs=dict(unit.inputs),
            ))
    return specs


def _upstream_assets(ws: Workspace, stages: Sequence[str], platform: str
                     ) -> dict[str, tuple[AssetId, str]]:
    from prebake.plan import asset_for, make_plan

    out: dict[str, tuple[AssetId, str]] = {}
    for s in stages:
        for unit in make_plan(ws, stage=s, platform=platform).units:
            if unit.stage == s and unit.recipe is None:
                out[s] = (asset_for(unit), unit.input_hash)
    return out


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


def build(ws: Workspace, specs: Sequence[UnitSpec], opts: Options,
          emit: Emit | None = None) -> list[UnitResult]:
    """Run ``specs`` (dependency order) and return one result per unit, in the same order."""
    if opts.dry_run:
        return _build(ws, specs, opts, emit)
    with _workspace_lock(ws):
        return _build(ws, specs, opts, emit)


def _build(ws: Workspace, specs: Sequence[UnitSpec], opts: Options,
           emit: Emit | None = None) -> list[UnitResult]:
    emit = emit or (lambda _u, _s, _m: None)
    store = open_store(ws.default_store, root=ws.root)  # a dry run reads it: what would skip
    if not opts.dry_run and opts.publish and not getattr(store, "writable", True):
        raise PrebakeError(f"{ws.default_store}: the default store is read-only")
    cancel = threading.Event()
    by_id = {s.id: s for s in specs}
    results: dict[str, UnitResult] = {}
    pending = list(specs)
    running: dict[Future[UnitResult], UnitSpec] = {}

    def ready(s: UnitSpec) -> bool:
        return all(d not in by_id or d in results for d in s.deps)

    def blocked_by(s: UnitSpec) -> str | None:
        for d in s.deps:
            r = results.get(d)
            if r is not None and r.state in ("failed", "blocked"):
                return d
        return None

    with ThreadPoolExecutor(max(1, opts.jobs), thread_name_prefix="unit") as pool:
        try:
            while pending or running:
                for s in list(pending):
                    if (bad := blocked_by(s)) is not None:
                        pending.remove(s)
                        results[s.id] = UnitResult(s.id, "blocked", asset=s.asset.filename,
                                                   input_hash=s.input_hash,
                                                   message=f"not built: {bad} failed")
                        emit(s.id, "blocked", results[s.id].message)
                    elif ready(s) and len(running) < max(1, opts.jobs):
                        pending.remove(s)
                        emit(s.id, "running", "starting")
                        b = UnitBuilder(ws, s, opts, store, emit, cancel)
                        running[pool.submit(b.run)] = s
                if not running:
                    if pending:  # plan deps that can never be met: refuse instead of spinning
                        raise PrebakeError("units wait on each other: "
                                           + ", ".join(s.id for s in pending))
                    continue
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for f in done:
                    s = running.pop(f)
                    r = f.result()
                    results[s.id] = r
                    emit(s.id, r.state, r.message or r.reason)
        except BaseException:
            cancel.set()
            raise
    return [results[s.id] for s in specs]
