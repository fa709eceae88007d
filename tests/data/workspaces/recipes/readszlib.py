"""A recipe that reads a pin (zlib) next to its own."""

from prebake.recipes import Build, Recipe

RECIPE = Recipe(
    name="readszlib",
    pin="tiny",
    pins=("zlib",),
    platforms={"*": Build(commands=("{cc} -DZLIB={pins[zlib]} -c {src}/a.c",))},
)
