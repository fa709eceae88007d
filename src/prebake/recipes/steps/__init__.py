"""Programs a recipe runs as build commands (``{python} -m prebake.recipes.steps.NAME``).

Each is a small, documented step that a build needs and a shell line would do badly: supply a
project's FetchContent dependencies from verified archives, stand in for a compiler installer.
What they print goes into the unit's build log.
"""
