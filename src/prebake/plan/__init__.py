"""The plan: units (stage or recipe × platform) in build order with automatic input hashes."""

from prebake.plan.hashing import HASH_SCHEME, ToolchainIdentity, platform_profile, recipe_inputs
from prebake.plan.planner import make_plan
from prebake.plan.status import STATUSES, plan_statuses, unit_status
from prebake.plan.units import Plan, Unit, asset_for

__all__ = [
    "HASH_SCHEME",
    "STATUSES",
    "Plan",
    "ToolchainIdentity",
    "Unit",
    "asset_for",
    "make_plan",
    "plan_statuses",
    "platform_profile",
    "recipe_inputs",
    "unit_status",
]
