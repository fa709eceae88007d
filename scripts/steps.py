"""The Python that ``scripts/long-leg`` and ``scripts/main-job`` call, in one importable file
instead of ``python -c`` strings no test runs: each script's ``--dry-run`` calls these for real
(``tests/integration/test_scripts.py``), so a recipe or a module that moves fails CI, not the
next person who runs a long leg.

    steps.py host-tool WORKSPACE RECIPE TOOL   # NAME==VERSION of a recipe's pinned host tool
    steps.py cc-folder WORKSPACE PLATFORM      # the folder of the platform's compiler
    steps.py pin WORKSPACE NAME                # the version a workspace pins

Each reads what it says through prebake itself (the workspace as ``prebake`` loads it, the
toolchain as ``prebake toolchain list --json`` reports it), never from where a file happens to
be; a name that is not there is one line naming it and exit 2.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from prebake.errors import PrebakeError
from prebake.intake import load_workspace


class StepError(Exception):
    """What a step cannot answer, said in one line."""


def host_tool(workspace: Path, recipe: str, tool: str) -> str:
    """``cmake==3.31.6``: the host tool ``tool`` that ``recipe`` pins, as ``pip`` names it."""
    ws = load_workspace(workspace)
    if recipe not in ws.recipes:
        raise StepError(f"{workspace}: no recipe {recipe} (it has {', '.join(sorted(ws.recipes))})")
    tools = {t.name: t for t in ws.recipes[recipe].host_tools}
    if tool not in tools:
        raise StepError(f"recipe {recipe} pins no host tool {tool} "
                        f"(it pins {', '.join(sorted(tools)) or 'none'})")
    return f"{tool}=={tools[tool].version}"


def cc_folder(workspace: Path, platform: str) -> Path:
    """The folder of ``platform``'s C compiler: a toolchain environment's wrappers (``emcmake``,
    its ``cmake`` and ``node`` beside ``emcc``), as ``prebake toolchain list`` resolves it."""
    proc = subprocess.run([sys.executable, "-m", "prebake", "-C", str(workspace), "toolchain",
                           "list", "--platform", platform, "--json"],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise StepError(f"prebake toolchain list --platform {platform}: "
                        f"{(proc.stderr or proc.stdout).strip()}")
    (entry,) = json.loads(proc.stdout)["platforms"]
    if entry["status"] != "ok" or not entry["resolved"]:
        raise StepError(entry["reason"] or f"platform {platform}: {entry['status']}")
    return Path(entry["resolved"]).parent


def pin(workspace: Path, name: str) -> str:
    """``7.1.5``: what the workspace pins ``name`` to (a bump is one ``prebake pin``, and the
    long leg's steps follow it)."""
    ws = load_workspace(workspace)
    if name not in ws.pins:
        raise StepError(f"{workspace}: no pin {name} (it pins {', '.join(sorted(ws.pins))})")
    return ws.pins[name]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="scripts/steps.py", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="step", required=True)
    h = sub.add_parser("host-tool", help="NAME==VERSION of a recipe's pinned host tool")
    h.add_argument("workspace", type=Path)
    h.add_argument("recipe")
    h.add_argument("tool")
    c = sub.add_parser("cc-folder", help="the folder of the platform's compiler")
    c.add_argument("workspace", type=Path)
    c.add_argument("platform")
    v = sub.add_parser("pin", help="the version a workspace pins")
    v.add_argument("workspace", type=Path)
    v.add_argument("name")
    a = p.parse_args(argv)
    try:
        if a.step == "host-tool":
            print(host_tool(a.workspace, a.recipe, a.tool))
        elif a.step == "pin":
            print(pin(a.workspace, a.name))
        else:
            print(cc_folder(a.workspace, a.platform))
    except (StepError, PrebakeError) as exc:
        print(f"scripts/steps.py {a.step}: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
