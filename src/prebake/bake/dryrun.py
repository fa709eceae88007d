"""``build --dry-run``: each unit's exact downloads, commands and environment, run nothing."""

from __future__ import annotations

from typing import Any

from prebake.bake.buildenv import prepare
from prebake.bake.layout import Layout, work_dirs
from prebake.bake.options import Options
from prebake.bake.process import expand
from prebake.errors import PrebakeError
from prebake.model.recipe import Build, Repackage
from prebake.model.workspace import Workspace
from prebake.plan.units import Unit
from prebake.redact import env_secrets, redact_env, redact_json
from prebake.sources import SourceCache, describe, render_source
from prebake.store.base import Store, read_manifest


def dry_run_verdict(store: Store | None, unit: Unit, force: bool) -> str:
    """What a real run would do with this unit, so a dry run does not overstate the work."""
    if force:
        return "dry run: would build (--force)"
    try:
        m = read_manifest(store, unit.asset) if store is not None else None
    except (PrebakeError, OSError) as exc:
        return f"dry run: would build unless the store has it (store not asked: {exc})"
    if m is not None and m.input_hash == unit.input_hash:
        return "dry run: would skip (input hash matches the asset in the store)"
    return "dry run: would build (" + ("no asset in the store" if m is None
                                       else "input hash differs from the stored asset") + ")"


def dry_run_steps(ws: Workspace, unit: Unit, opts: Options, cache: SourceCache
                  ) -> list[dict[str, Any]]:
    """One step per recipe: what a real build would download or run, and where."""
    dirs = work_dirs(Layout(ws.root), unit)
    env = prepare(ws, unit, opts, dirs)  # what the build would make once, before its steps
    pname = unit.platform.name
    steps: list[dict[str, Any]] = []
    for recipe in unit.recipes:
        work = dirs.recipe(recipe)
        strategy = recipe.strategy_for(pname)
        step: dict[str, Any] = {"recipe": recipe.name, "platform": pname}
        ver = ws.pins[recipe.pin]
        if isinstance(strategy, Repackage):
            step["strategy"] = "repackage"
            step["download"] = [u.format(version=ver) for u in (strategy.url, *strategy.mirrors)]
            step["sha256"] = strategy.sha256
            step["verified"] = bool(strategy.sha256)  # from the source lock
            step["layout"] = dict(strategy.layout)
        elif isinstance(strategy, Build):
            ctx = env.invocation(recipe).context
            step["strategy"] = "build"
            step["sources"] = [line for _, s in recipe.sources_for(ws.pins[recipe.pin])
                               for line in
                               describe(render_source(s, ver, ws.pins), work, recipe.folder,
                                        cache)]
            step["cwd"] = str(work / "build")
            step["env"] = redact_env(env.invocation(recipe).env)  # printed
            step["commands"] = [expand(c, ctx, f"recipe {recipe.name} command {i}")
                                for i, c in enumerate(strategy.commands, 1)]
        else:
            step["strategy"] = None
        steps.append(step)
    # printed: URLs (sources, git commands) and commands may carry credentials
    shown = redact_json(steps, *env_secrets(opts.caller_env))
    assert isinstance(shown, list)
    return shown
