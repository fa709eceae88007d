"""The onnxruntime recipe, one folder: ``recipe.py`` (the recipe the loader runs), ``deps.toml``
(the archives that supply each release's ``cmake/deps.txt``), the patches they take, and the
programs its build commands run (``{python} -m prebake.recipes.builtin.onnxruntime.NAME``):
``fetchcontent`` (supply FetchContent from verified archives), ``emsdk_standin`` (the pinned
Emscripten in place of build.py's emsdk download), ``bundle`` (upstream's static bundle, each
library once)."""
