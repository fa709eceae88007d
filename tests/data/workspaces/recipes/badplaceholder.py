"""A recipe whose command uses a placeholder that does not exist."""

from prebake.recipes import Build, Recipe

RECIPE = Recipe(
    name="badplaceholder",
    pin="tiny",
    platforms={"*": Build(commands=("{cxx} -c {sorce}/a.cpp",))},
)
