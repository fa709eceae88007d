"""``prebake build``'s library API: plan once, then run each unit's steps under a job budget.

Data flow, and why each step exists::

    make_plan ─► Unit (frozen: Platform, Stage, Recipes, upstream Units, input hash, AssetId)
      │            made once per build by plan_units(); nothing below looks a name up again
      ▼
    run_unit ─► skip?   the store holds the asset with this input hash: nothing to do
      │         preflight  refuse what can never build (no strategy, placeholder sha256)
      │         compose    the earlier stages' files form the prefix the unit builds against
      │                    (built here, or restored from their verified assets in the store:
      │                    stage_files)
      │         per recipe:
      │           build_recipe   sources → commands (from_source), or an upstream archive's
      │                          layout (repackage) → prefix
      │           guard_recipe   the guards (guards.GUARDS): outputs present, inspected,
      │                          contract-checked, link-tested; nothing unproven goes further
      │           prove_install  the install's version evidence and CMake packages (adopt)
      │           export_configs CMake/pkg-config files later recipes find_package
      │         guard_unchanged  no earlier stage's file changed (it already shipped)
      │         package    asset + manifest (what the guards proved, toolchain, inputs) + SBOM,
      │                    no build folder left in any file (packaging)
      │         attest     the provenance statement for the asset's sha256
      │         publish    (diff against the store's current asset) → the store
      ▼
    UnitResult per unit ─► the table, ``build --json``, the exit status

The scheduler is :mod:`prebake.bake.scheduler`; the chain of steps is :mod:`prebake.bake.unit`:
each takes the unit's fixed ``UnitRun`` (:mod:`prebake.bake.unitrun`) and the previous step's
frozen value and returns its own, so a new step goes between two others without reaching into
shared state. The modules named in parentheses above do the work a step hands off.

Independent units (other platforms, recipes of a per-recipe stage) run in parallel; a unit
starts once every unit it depends on has been built or skipped. A failed unit stops its
dependents (reported as ``blocked``) while unrelated units finish. Ctrl-C cancels the units in
flight (their process groups are killed) and nothing half-written is left: assets and cache
entries only ever appear through atomic renames.
"""

from __future__ import annotations

from prebake.bake.options import Options
from prebake.bake.result import UnitResult, UnitState
from prebake.bake.scheduler import build, check_guards_only, check_toolchains, plan_units
from prebake.plan.units import Unit

__all__ = ["Options", "Unit", "UnitResult", "UnitState", "build", "check_guards_only",
           "check_toolchains", "plan_units"]
