"""A recipe whose URL source has no sha256 (refused)."""

from prebake.recipes import Build, Recipe, UrlSource

RECIPE = Recipe(
    name="urlnosha",
    pin="tiny",
    sources=(UrlSource("https://example.org/zlib-{version}.tar.gz", sha256=""),),
    platforms={"*": Build(commands=("{cc} -c {src}/zlib.c",))},
)
