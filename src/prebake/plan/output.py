"""Plan output: a markdown table (a GitHub step summary as is), ``--explain``, and JSON."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from prebake.jsonio import SCHEMA_VERSION
from prebake.model.workspace import Workspace
from prebake.plan.units import Plan, Unit


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_table(plan: Plan, statuses: Mapping[str, str]) -> str:
    lines = ["| unit | stage | platform | input hash | status |", "|---|---|---|---|---|"]
    for u in plan.units:
        lines.append(f"| `{u.id}` | {u.stage.name} | {u.platform.name} | `{u.short_hash}` | "
                     f"{statuses.get(u.id, 'unknown')} |")
    return "\n".join(lines) + "\n"


def _inputs_table(inputs: Mapping[str, str]) -> list[str]:
    lines = ["| input | value |", "|---|---|"]
    lines += [f"| {_cell(k)} | `{_cell(v)}` |" for k, v in inputs.items()]
    return lines


Changes = list[tuple[str, str | None, str | None]] | None


def _changes_lines(status: str, changes: Changes, previous: str | None = None) -> list[str]:
    if status != "stale" and previous is None:
        return []
    if changes is None:
        return ["", "The stored asset was built from other inputs (its manifest does not list "
                "them, so only the hash can be compared)."]
    what = (f"the previous version's asset `{previous}`" if previous is not None
            else "the stored asset")
    lines = ["", f"Changed since {what}:", "", "| input | stored | now |",
             "|---|---|---|"]
    lines += [f"| {_cell(n)} | `{_cell(a or '-')}` | `{_cell(b or '-')}` |"
              for n, a, b in changes]
    return lines


def explain_markdown(unit: Unit, status: str, changes: Changes = None,
                     previous: str | None = None) -> str:
    """Which inputs make up a unit's hash, so a user sees why it will (not) rebuild; for a new
    version, what changed since ``previous`` (the store's previous version's asset)."""
    lines = [f"### `{unit.id}` (stage {unit.stage.name}, platform {unit.platform.name})", "",
             f"input hash `{unit.input_hash}`, status: {status}",
             *_changes_lines(status, changes, previous), "",
             *_inputs_table(unit.inputs)]
    if unit.package == "prefix":
        for name, inputs in unit.recipe_inputs.items():
            lines += ["", f"#### recipe `{name}`", "", *_inputs_table(inputs)]
    return "\n".join(lines) + "\n"


def plan_json(ws: Workspace, plan: Plan, statuses: Mapping[str, str], store: str
              ) -> dict[str, Any]:
    units = []
    for u in plan.units:
        d = u.to_json()
        d["status"] = statuses.get(u.id, "unknown")
        units.append(d)
    return {
        "schema_version": SCHEMA_VERSION,
        "project": {"name": ws.project.name, "version": ws.project.version},
        "store": store,
        "stages": list(plan.stages),
        "platforms": list(plan.platforms),
        "units": units,
    }


def explain_json(unit: Unit, status: str, changes: Changes = None,
                 previous: str | None = None) -> dict[str, Any]:
    d = unit.to_json()
    d["status"] = status
    d["compared_with"] = previous
    d["changed"] = (None if changes is None else
                    [{"input": n, "stored": a, "now": b} for n, a, b in changes])
    d["recipe_inputs"] = {k: dict(v) for k, v in unit.recipe_inputs.items()}
    return {"schema_version": SCHEMA_VERSION, "unit": d}
