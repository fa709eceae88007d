"""A minimal valid recipe for the invalid-workspace tests."""

from prebake.recipes import Build, Outputs, Recipe

RECIPE = Recipe(
    name="tiny",
    pin="tiny",
    platforms={"*": Build(commands=("{cc} -c {src}/tiny.c -o {build}/tiny.o",))},
    outputs=Outputs(libs={"*": ("lib/libtiny.a",)}),
)
