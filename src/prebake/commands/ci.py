"""``prebake ci``: write the GitHub Actions workflow from the plan, and run its steps.

``ci github [--out DIR] [--check]`` writes (or checks) the workflow; ``ci decide`` and
``ci leg`` are what the generated jobs run: the run's publish decision with the plan table (job
log and step summary), and one leg's hash-skip.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

NAME = "ci"
HELP = "generate the GitHub Actions workflow from the plan (and the steps its jobs run)"
ORDER = 80


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="ci_command", metavar="WHAT", required=True)
    gh = sub.add_parser("github", help="write the workspace's workflow "
                                       "(.github/workflows/prebake-<project>.yml)")
    gh.add_argument("--out", metavar="DIR", default=None,
                    help="folder for the workflow (default: .github/workflows at the repository "
                         "root holding the workspace)")
    gh.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 if the workflow on disk is not what would be "
                         "written")
    dec = sub.add_parser("decide", help="(in CI) what this run publishes, and the plan table")
    dec.add_argument("--store", metavar="URL", help="store to look units up in")
    dec.add_argument("--stages", metavar="LIST", default="",
                     help="comma-separated stages or aliases this run builds (a manual run's "
                          "input; empty: all)")
    dec.add_argument("--platforms", metavar="LIST", default="",
                     help="comma-separated platforms this run builds (empty: all)")
    dec.add_argument("--json", action="store_true", help="machine-readable output")
    leg = sub.add_parser("leg", help="(in CI) hash-skip one stage x platform leg")
    leg.add_argument("--stage", required=True, metavar="S")
    leg.add_argument("--platform", required=True, metavar="P")
    leg.add_argument("--store", metavar="URL", help="store to look units up in")
    leg.add_argument("--release", metavar="TAG", default=None,
                     help="release the run publishes to (default: continuous)")
    leg.add_argument("--json", action="store_true", help="machine-readable output")


def _github_output(values: dict[str, str]) -> None:
    """Append ``key=value`` lines to ``$GITHUB_OUTPUT`` when running in GitHub Actions."""
    target = os.environ.get("GITHUB_OUTPUT")
    if target:
        with open(target, "a", encoding="utf-8") as fh:
            fh.writelines(f"{k}={v}\n" for k, v in values.items())


def _step_summary(text: str) -> None:
    from prebake.printable import printable

    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if target:
        with open(target, "a", encoding="utf-8") as fh:
            fh.write(printable(text))


def _default_out(ws: Any) -> Path:
    for d in (ws.root, *ws.root.parents):
        if (d / ".git").exists():
            return Path(d) / ".github" / "workflows"
    return Path(ws.root) / ".github" / "workflows"


def _github(args: argparse.Namespace, ws: Any) -> int:
    from prebake.ci.github import generate, render, workflow_path
    from prebake.commands._common import err_console
    from prebake.jsonio import atomic_write_text

    out_dir = Path(args.out) if args.out else _default_out(ws)
    if not out_dir.is_absolute():
        out_dir = Path.cwd() / out_dir
    text = render(generate(ws, out_dir))
    path = workflow_path(ws, out_dir)
    if args.check:
        current = path.read_text(encoding="utf-8") if path.is_file() else None
        if current == text:
            print(f"{path}: up to date")
            return 0
        why = "missing" if current is None else "stale"
        err_console().print(f"{path}: {why}; regenerate with `prebake ci github`",
                            markup=False, highlight=False)
        return 1
    atomic_write_text(path, text)
    print(f"wrote {path}")
    return 0


def _decide(args: argparse.Namespace, ws: Any) -> int:
    from prebake.ci.decide import decide_from_env
    from prebake.ci.github import publish_store
    from prebake.ci.selection import outputs, select
    from prebake.commands._common import print_json
    from prebake.jsonio import SCHEMA_VERSION
    from prebake.plan import make_plan, plan_statuses
    from prebake.plan.output import markdown_table
    from prebake.redact import env_secrets, redact_text

    # the selection first: a name the workspace does not know fails the run, writing nothing
    selection = select(ws, args.stages, args.platforms)
    store = args.store or publish_store(ws)
    decision = decide_from_env(os.environ, ws.ci.default_branch)
    plan = make_plan(ws)
    statuses = plan_statuses(plan, store, ws.root, decision.release)
    todo = selection.legs(plan, statuses)
    _github_output(outputs(decision.release, todo))
    if args.json:
        print_json({"schema_version": SCHEMA_VERSION, "event": decision.event,
                    "ref": decision.ref, "release": decision.release,
                    "reason": decision.reason, "store": store,
                    "stages": list(selection.stages), "platforms": list(selection.platforms),
                    "legs": list(todo), "statuses": statuses})
        return 0
    target = f"release `{decision.release}` of `{store}`" if decision.release else "nothing"
    built = sum(1 for s in statuses.values() if s == "built")
    legs = ("every stage on every platform" if selection.everything else
            "stages " + ", ".join(f"`{s}`" for s in selection.stages) + " on platforms "
            + ", ".join(f"`{p}`" for p in selection.platforms) + " (the run's inputs; the "
            "other legs are skipped)")
    held = [f"{s}/{p}" for s in selection.stages for p in selection.platforms
            if f"{s}/{p}" not in todo and any(u.stage.name == s and u.platform.name == p
                                              for u in plan.units)]
    matrix = (", ".join(f"`{leg}`" for leg in todo) or "none") + (
        " (the store holds every asset of " + ", ".join(f"`{leg}`" for leg in held)
        + ": those start no runner)" if held else "")
    text = (
        "## prebake plan\n\n"
        f"- event: `{decision.event or '?'}`, ref: `{decision.ref or '?'}`\n"
        f"- publishes: {target} ({decision.reason})\n"
        f"- builds: {legs}\n"
        f"- already built: {built} of {len(statuses)} units\n"
        f"- legs to build: {matrix}\n\n"
        + markdown_table(plan, statuses)
    )
    text = redact_text(text, *env_secrets(os.environ))  # the store URL may carry credentials
    print(text, end="")
    _step_summary(text)
    return 0


def _leg(args: argparse.Namespace, ws: Any) -> int:
    from prebake.ci.github import publish_store
    from prebake.ci.leg import prepare_leg
    from prebake.commands._common import print_json
    from prebake.jsonio import SCHEMA_VERSION
    from prebake.names import check_name
    from prebake.redact import redact_text

    if args.release is not None:
        check_name(args.release, "--release")
    ws.stage_names(args.stage)
    ws.platform_names(args.platform)
    store = args.store or publish_store(ws)
    result = prepare_leg(ws, args.stage, args.platform, store, args.release)
    _github_output({"skip": "true" if result.skip else "false"})
    if args.json:
        print_json({"schema_version": SCHEMA_VERSION, "stage": result.stage,
                    "platform": result.platform, "skip": result.skip,
                    "statuses": result.statuses, "fetched": result.fetched})
        return 0
    for unit, status in result.statuses.items():
        print(f"{unit}: {status}")
    for name in result.fetched:
        print(redact_text(f"fetched {name} from {store} (built by an earlier run)"))
    print("skip: every unit is in the store" if result.skip else "build: some units are missing")
    return 0


def run(args: argparse.Namespace) -> int:
    from prebake.commands._common import find_workspace
    from prebake.intake import load_workspace

    ws = load_workspace(find_workspace(args.workspace))
    handlers = {"github": _github, "decide": _decide, "leg": _leg}
    return handlers[args.ci_command](args, ws)
