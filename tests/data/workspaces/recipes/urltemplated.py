"""A recipe whose templated URL carries a literal sha256 (refused: it cannot follow the pin)."""

from prebake.recipes import Build, Recipe, UrlSource

RECIPE = Recipe(
    name="urltemplated",
    pin="tiny",
    sources=(UrlSource("https://example.org/zlib-{version}.tar.gz", sha256="ab" * 32),),
    platforms={"*": Build(commands=("{cc} -c {src}/zlib.c",))},
)
