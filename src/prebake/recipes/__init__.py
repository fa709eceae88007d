"""Recipes: how one dependency is produced (sources, per-platform strategy, outputs).

Recipe files (``recipes/<name>.py`` in a workspace, or ``prebake/recipes/builtin/<name>.py``)
define ``RECIPE = Recipe(...)`` with the classes re-exported here.
"""

from prebake.recipes.api import (
    ANY_PLATFORM,
    PLACEHOLDERS,
    Build,
    Command,
    Component,
    GitSource,
    HostTool,
    Licensed,
    LicenseString,
    LicenseText,
    LocalSource,
    MinToolchain,
    OtherCompiler,
    Outputs,
    Recipe,
    Repackage,
    Since,
    Snippet,
    Source,
    Strategy,
    UrlSource,
    VersionCheck,
    VersionString,
)
from prebake.recipes.loader import (
    builtin_names,
    find_recipe,
    load_recipe_file,
    try_load_recipe,
    workspace_names,
)
from prebake.recipes.validate import validate_recipe

__all__ = ["ANY_PLATFORM", "PLACEHOLDERS", "Build", "Command", "Component", "GitSource",
           "HostTool", "LicenseString", "LicenseText", "Licensed", "LocalSource", "MinToolchain",
           "OtherCompiler", "Outputs", "Recipe", "Repackage", "Since",
           "Snippet", "Source", "Strategy", "UrlSource", "VersionCheck",
           "VersionString", "builtin_names",
           "find_recipe", "load_recipe_file", "try_load_recipe", "validate_recipe",
           "workspace_names"]
