"""The values the inputs share, one floor below them: a recipe (``recipe``), a workspace
(``workspace``) with the CI defaults it fills ``[ci]`` from (``ci_defaults``), and the table of
compiler families (``families``). Recipes, sources, toolchains and the workspace loader all read
these; none of them imports another for a value."""
