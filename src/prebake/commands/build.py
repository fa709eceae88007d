"""``prebake build``: build, guard, package and publish what the plan says is missing."""

from __future__ import annotations

import argparse
import dataclasses
import os
import shlex
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prebake.bake.result import UnitResult
    from prebake.plan.units import Unit

NAME = "build"
HELP = "build the plan's units (skipping those already in the store), guard, package, publish"
ORDER = 20


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--stage", metavar="S", help="a stage or alias (default: every stage)")
    p.add_argument("--platform", metavar="P", action="append",
                   help="a platform (repeatable; default: every platform)")
    p.add_argument("--unit", metavar="UNIT", action="append",
                   help="only this unit, as `prebake plan` names it (ffmpeg/wasm; "
                        "repeatable): one recipe of a per-recipe stage without the others; "
                        "the stages it builds on come from the store")
    p.add_argument("-j", "--jobs", type=int, default=1, metavar="N",
                   help="units built in parallel (default 1)")
    p.add_argument("--force", action="store_true",
                   help="rebuild units even when the store has an asset with their input hash")
    p.add_argument("--dry-run", action="store_true",
                   help="print each unit's exact commands and environment; run nothing")
    p.add_argument("--diff", action="store_true",
                   help="diff each new asset against the store's current release before "
                        "publishing (in --json and appended to $GITHUB_STEP_SUMMARY); a "
                        "breaking diff fails its unit and publishes nothing (exit 1)")
    p.add_argument("--allow-breaking", action="store_true",
                   help="with --diff: publish even when the diff is breaking (still reported)")
    p.add_argument("--guards-only", metavar="UNIT",
                   help="re-run the guards (inspect, contract, link tests) on UNIT's existing "
                        "build tree, then package and publish as a build would; refuses "
                        "(exit 2) unless the tree was built from the current non-guard inputs")
    p.add_argument("--store", metavar="URL",
                   help="where to look for built units and publish new ones (default: "
                        "$PREBAKE_STORE, else the workspace's default store)")
    p.add_argument("--json", action="store_true", help="machine-readable report")


def _render_dry_run(results: list[Any]) -> None:
    from prebake.commands._common import console

    out = console()
    for r in results:
        out.print(f"# unit {r.unit} -> {r.asset}  (input hash {r.input_hash[:16]}…)",
                  markup=False)
        out.print(f"# {r.reason}", markup=False)
        for step in r.dry_run:
            out.print(f"## recipe {step['recipe']} ({step['strategy']})", markup=False)
            if step["strategy"] == "repackage":
                for u in step["download"]:
                    out.print(f"download {u}", markup=False)
                flag = "" if step["verified"] else ("  (not in prebake.sources.lock: the "
                                                    "build would refuse)")
                out.print(f"sha256 {step['sha256']}{flag}", markup=False)
                for pat, dest in step["layout"].items():
                    out.print(f"layout {pat} -> {dest}", markup=False)
                continue
            for line in step.get("sources", []):
                out.print(f"source: {line}", markup=False)
            out.print("env -i " + " ".join(shlex.quote(f"{k}={v}")
                                          for k, v in sorted(step["env"].items())),
                      markup=False)
            out.print(f"cd {shlex.quote(step['cwd'])}", markup=False)
            for argv in step["commands"]:
                out.print(shlex.join(argv), markup=False)
        out.print("", markup=False)


def _table(results: Sequence[UnitResult]) -> Any:
    from rich.table import Table
    from rich.text import Text

    t = Table(title="prebake build")
    for col in ("unit", "state", "asset", "seconds", "detail"):
        t.add_column(col)
    colour = {"built": "green", "skipped": "cyan", "failed": "red", "blocked": "yellow"}
    for r in results:
        # a failure's detail quotes what a command wrote: plain text, never markup
        t.add_row(Text(r.unit), Text(r.state, style=colour.get(r.state, "white")),
                  Text(r.asset or ""), f"{r.seconds:.2f}", Text(_line(r.detail, "")[:100]))
    return t


def run(args: argparse.Namespace) -> int:
    from prebake.bake import Options, build, check_guards_only, check_toolchains, plan_units
    from prebake.commands._common import console, err_console, find_workspace, print_json
    from prebake.errors import PrebakeError
    from prebake.intake import load_workspace, resolve_store_url
    from prebake.jsonio import SCHEMA_VERSION

    if args.jobs < 1:
        raise PrebakeError(f"-j {args.jobs}: needs at least one job")
    ws = load_workspace(find_workspace(args.workspace))
    url = args.store or os.environ.get("PREBAKE_STORE")
    if url:
        # CI legs build into a local store and publish in a separate, permissioned job
        ws = dataclasses.replace(ws, default_store=resolve_store_url(url, ws.root))
    if args.platform:
        for p in args.platform:
            ws.platform_names(p)  # one clear error for an unknown platform
    if args.allow_breaking and not args.diff:
        raise PrebakeError("--allow-breaking only means something with --diff")
    guards_only = args.guards_only is not None
    if guards_only:
        if args.stage or args.platform or args.dry_run or args.unit:
            raise PrebakeError("--guards-only names one unit; it takes no --stage, --platform "
                               "or --dry-run")
        every = plan_units(ws, None, None)
        units = tuple(u for u in every if u.id == args.guards_only)
        if not units:
            raise PrebakeError(f"--guards-only {args.guards_only}: no such unit in the plan "
                               f"(units: {', '.join(u.id for u in every)})")
        check_guards_only(ws, units)
    else:
        units = plan_units(ws, args.stage, args.platform)
        if args.unit:
            units = _only(units, args.unit)
    opts = Options(jobs=args.jobs, force=args.force, dry_run=args.dry_run,
                   caller_env=dict(os.environ), diff=args.diff,
                   allow_breaking=args.allow_breaking, guards_only=guards_only)
    if args.json or args.dry_run:
        results = build(ws, units, opts)
    else:
        check_toolchains(ws, units, opts)  # a refusal before the progress display starts
        results = with_progress(ws, units, opts)
    failed = [r for r in results if r.state.bad]
    if args.diff:
        _write_summary([r.diff_markdown for r in results if r.diff_markdown])
    if args.json:
        print_json({"schema_version": SCHEMA_VERSION, "workspace": str(ws.root),
                    "store": ws.default_store, "dry_run": args.dry_run,
                    "ok": not failed, "units": [r.to_json() for r in results]})
    elif args.dry_run:
        _render_dry_run(results)
    else:
        console().print(_table(results))
        from rich.markup import escape

        err = err_console()
        for r in failed:
            if r.state == "failed":  # (the console makes every string printable)
                err.print(f"[red]✗ {escape(r.unit)} failed[/red] (log: {escape(str(r.log))})")
                err.print(r.message, markup=False, highlight=False)
    return 1 if failed else 0


def _only(units: Sequence[Unit], wanted: Sequence[str]) -> tuple[Unit, ...]:
    """``--unit``: the selected units among those planned, in plan order; a name that is not
    one of them is one line listing those that are."""
    from prebake.errors import PrebakeError
    from prebake.names import did_you_mean

    ids = [u.id for u in units]
    for name in wanted:
        if name not in ids:
            raise PrebakeError(f"--unit {name}: not a unit of this build"
                               f"{did_you_mean(name, ids)} (units: {', '.join(ids)})")
    return tuple(u for u in units if u.id in wanted)


def _write_summary(parts: list[str]) -> None:
    """Append the diffs to the GitHub step summary when there is one (else print them)."""
    from prebake.commands._common import err_console
    from prebake.redact import env_secrets, redact_text

    if not parts:
        return
    from prebake.printable import printable

    # a CI page, published: no secret, and what an asset's files say is text there
    text = printable(redact_text("\n".join(parts), *env_secrets(os.environ)))
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(text + "\n")
    else:
        err_console().print(text, markup=False, highlight=False)


def with_progress(ws: Any, units: Sequence[Unit], opts: Any) -> list[Any]:
    """Run the build with a live display on stderr: in a terminal one line per running unit
    (bar, the build tool's count, the time left, the step); elsewhere (a CI log) plain lines:
    each step as it starts and, every ``$PREBAKE_PROGRESS_INTERVAL`` seconds (30), how far
    each running unit is — never a control character."""
    from prebake.commands._common import err_console

    if err_console().is_terminal:
        return _live(ws, units, opts)
    return _plain(ws, units, opts)


def _line(message: str, state: str) -> str:
    """One line of what a unit says, redacted whole (a cut URL would no longer look like
    one), through ``prebake.printable`` (a command's words are shown, never obeyed)."""
    from prebake.printable import printable_line
    from prebake.redact import env_secrets, redact_text

    return printable_line(redact_text(message, *env_secrets(os.environ)), state)


def _live(ws: Any, units: Sequence[Unit], opts: Any) -> list[Any]:
    import time

    from rich.progress import (
        BarColumn,
        Progress,
        ProgressColumn,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )
    from rich.text import Text

    from prebake.bake import build
    from prebake.bake.progress import Status
    from prebake.commands._common import err_console

    class StatusColumn(ProgressColumn):
        """The count and the time left, counting down between the unit's output lines."""

        def render(self, task: Any) -> Text:
            status = task.fields.get("status")
            text = status.text(time.monotonic()) if isinstance(status, Status) else ""
            return Text(f"{text:<34}", style="cyan")

    # the description quotes a command line or a command's output: text, never markup
    with Progress(SpinnerColumn(), TextColumn("{task.fields[unit]:<24}", markup=False),
                  BarColumn(bar_width=20), StatusColumn(), TimeElapsedColumn(),
                  TextColumn("{task.description}", markup=False), console=err_console(),
                  transient=False) as progress:
        tasks = {u.id: progress.add_task("waiting", unit=u.id, total=None, status=None)
                 for u in units}

        def emit(unit: str, state: str, message: str) -> None:
            line = _line(message, state)
            if state == "running":
                progress.update(tasks[unit], description=line[:80])
            else:
                progress.update(tasks[unit], description=f"{state}: {line[:70]}", total=1,
                                completed=1, status=None)

        def on_progress(unit: str, status: Status) -> None:
            if status.fraction is None:
                progress.update(tasks[unit], status=status, total=None)
            else:
                progress.update(tasks[unit], status=status, total=1000,
                                completed=round(status.fraction * 1000))

        return build(ws, units, dataclasses.replace(opts, progress=on_progress), emit)


def progress_interval() -> float:
    """Seconds between two plain progress lines (``$PREBAKE_PROGRESS_INTERVAL``, default 30)."""
    from prebake.errors import PrebakeError

    raw = os.environ.get("PREBAKE_PROGRESS_INTERVAL", "30")
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0.1 <= value <= 86400:
        raise PrebakeError(f"PREBAKE_PROGRESS_INTERVAL={raw!r}: not a number of seconds "
                           "between 0.1 and 86400")
    return value


def _plain(ws: Any, units: Sequence[Unit], opts: Any) -> list[Any]:
    import sys
    import threading
    import time

    from prebake.bake import build
    from prebake.bake.progress import Status

    every = progress_interval()
    lock = threading.Lock()  # one line at a time on stderr, and the tables below
    running: dict[str, float] = {}  # unit -> when it started
    latest: dict[str, Status] = {}  # written by the units' output threads
    shown: dict[str, str] = {}

    def out(unit: str, text: str) -> None:
        sys.stderr.write(f"{unit}: {text}\n")
        sys.stderr.flush()

    def emit(unit: str, state: str, message: str) -> None:
        with lock:
            if state == "running":
                running.setdefault(unit, time.monotonic())
            else:
                running.pop(unit, None)
                latest.pop(unit, None)
            out(unit, _line(message, state) if state == "running"
                else f"{state}: {_line(message, state)}")

    def on_progress(unit: str, status: Status) -> None:
        with lock:
            latest[unit] = status

    stop = threading.Event()

    def tick() -> None:
        """Each running unit's status when it says something new (a count, a minute less)."""
        while not stop.wait(every):
            now = time.monotonic()
            with lock:
                for unit, status in sorted(latest.items()):
                    since = running.get(unit)
                    text = status.text(now)
                    if since is not None and text and shown.get(unit) != text:
                        shown[unit] = text
                        out(unit, f"{text} ({_elapsed(now - since)} in)")

    ticker = threading.Thread(target=tick, name="progress lines", daemon=True)
    ticker.start()
    try:
        return build(ws, units, dataclasses.replace(opts, progress=on_progress), emit)
    finally:
        stop.set()
        ticker.join()


def _elapsed(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes} min {secs:02d} s" if minutes else f"{secs} s"
