"""``prebake.toml`` loaded into a frozen, validated ``Workspace`` (``loader``): the one place
that reads the recipes, the source lock, the mirrors table and the toolchain environments
together, so it sits above all of them."""

from prebake.intake.loader import WORKSPACE_FILE, load_workspace, resolve_store_url

__all__ = ["WORKSPACE_FILE", "load_workspace", "resolve_store_url"]
