"""``prebake plan``: the units, their input hashes, and whether the store already has them."""

from __future__ import annotations

import argparse
import difflib
from typing import Any

NAME = "plan"
HELP = "list the units (stage or recipe × platform) in build order with input hashes and status"
ORDER = 10


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--stage", metavar="S", help="only this stage or alias (e.g. core, full)")
    p.add_argument("--platform", metavar="P", help="only this platform")
    p.add_argument("--explain", metavar="UNIT",
                   help="show the inputs that make up UNIT's hash (e.g. core/wasm)")
    p.add_argument("--store", metavar="URL", help="store to look units up in (default: the "
                   "workspace's default store)")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    from prebake.commands._common import err_console, find_workspace, print_json, say
    from prebake.errors import PrebakeError
    from prebake.intake import load_workspace, resolve_store_url
    from prebake.plan import make_plan, plan_statuses
    from prebake.plan.output import explain_json, explain_markdown, markdown_table, plan_json
    from prebake.plan.status import changed_inputs, stored_manifest, unit_status_from

    ws = load_workspace(find_workspace(args.workspace))
    store = resolve_store_url(args.store, ws.root) if args.store else ws.default_store
    if args.explain:
        plan = make_plan(ws)
        unit = plan.unit(args.explain)
        if unit is None:
            close = difflib.get_close_matches(args.explain, plan.ids, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise PrebakeError(f"no unit {args.explain!r} in the plan{hint}")
        try:
            manifest = stored_manifest(unit, store, ws.root)
            status = unit_status_from(unit, manifest)
        except (PrebakeError, OSError):
            manifest, status = None, "unknown"
        changes = changed_inputs(unit, manifest)
        previous: str | None = None
        if status == "missing":  # a new version: compare with the previous version's asset
            from prebake.plan.previous import previous_manifest

            try:
                found = previous_manifest(unit, store, ws.root)
            except (PrebakeError, OSError):
                found = None
            if found is not None:
                previous, changes = found[0], changed_inputs(unit, found[1])
        if args.json:
            print_json(explain_json(unit, status, changes, previous))
        else:
            say(explain_markdown(unit, status, changes, previous), end="")
        return 0
    plan = make_plan(ws, args.stage, args.platform)
    problems: list[str] = []
    statuses = plan_statuses(plan, store, ws.root, problems=problems)
    problems += _moved_git_refs(ws, plan.units)
    for line in problems:
        err_console().print(f"prebake: warning: {line}", markup=False, highlight=False)
    if args.json:
        print_json(plan_json(ws, plan, statuses, store))
    else:
        say(markdown_table(plan, statuses), end="")
    return 0


# ``git ls-remote`` per repository at plan time: short, since a plan must not hang on a remote
PLAN_GIT_TIMEOUT = 20.0


def _moved_git_refs(ws: Any, units: Any) -> list[str]:
    """A warning per git ref of the plan's units that names another commit upstream than the
    lock (or whose remote cannot be asked). The input hash reads the locked commit, so the
    status stays what the store says; the build refuses such a ref, and ``pin --check`` fails."""
    from prebake.sources.lock import git_refs, read_source_lock
    from prebake.sources.pinning import git_ref_problems

    refs = [(u.id, g) for u in units for r in u.recipes
            for g in git_refs(ws.recipes[r.name], u.platform.name, ws.pins)]
    if not refs:
        return []
    out = []
    for unit, gref, status in git_ref_problems(read_source_lock(ws.root), refs,
                                               PLAN_GIT_TIMEOUT):
        if status != "missing":  # a missing commit stopped the plan already
            out.append(f"{unit}: git {gref.url} at {gref.ref}: {status}; a build refuses it "
                       f"until `{gref.command}` locks the new commit")
    return out
