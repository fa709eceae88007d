"""``prebake build``'s library API: plan once, then run each unit's steps under a job budget.

How a unit goes from its plan to a published asset — the steps, what each reads and returns,
and the modules each hands work to — is described once, in docs/architecture.md ("prebake
build, step by step"); the chain itself is :func:`prebake.bake.unit.build_unit` and the
scheduler :mod:`prebake.bake.scheduler`.
"""

from __future__ import annotations

from prebake.bake.options import Options
from prebake.bake.result import UnitResult, UnitState
from prebake.bake.scheduler import build, check_guards_only, check_toolchains, plan_units
from prebake.plan.units import Unit

__all__ = ["Options", "Unit", "UnitResult", "UnitState", "build", "check_guards_only",
           "check_toolchains", "plan_units"]
