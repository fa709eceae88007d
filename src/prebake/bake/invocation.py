"""How a recipe's commands are invoked: their ``{placeholder}`` values and their environment
(the build runs them, the dry run prints them; both come from here)."""

from __future__ import annotations

from pathlib import Path

from prebake.bake import commands as cmdline
from prebake.bake.cores import LiveValues
from prebake.bake.env import build_env, compiler_launcher, launcher_env, with_launcher
from prebake.bake.layout import WorkDirs
from prebake.bake.options import Options
from prebake.package import relocate
from prebake.plan.model import Unit
from prebake.recipes.model import Build, Recipe
from prebake.workspace.model import Workspace, cmake_toolchain_path


def command_context(ws: Workspace, unit: Unit, opts: Options, recipe: Recipe, work: Path,
                    dirs: WorkDirs) -> cmdline.Context:
    """The ``{src}``, ``{prefix}``, ``{jobs}``… values and ``{cc}``… argv of a recipe's
    commands (the dry run prints the same)."""
    p = unit.platform
    launcher = compiler_launcher(opts.caller_env)
    flags = relocate.prefix_map_flags(dirs.root)  # the work folder stays out of the objects
    return cmdline.Context(
        values=LiveValues({"src": str(work / "src"), "build": str(work / "build"),
                           "prefix": str(dirs.prefix), "deps_prefix": str(dirs.deps),
                           "version": ws.pins[recipe.pin],
                           "platform": p.name, "os": p.os, "arch": p.arch,
                           "cmake_toolchain": cmake_toolchain_path(p, ws.root)},
                          {"jobs": lambda: opts.cores.share(unit.id)}),
        pins=ws.pins,
        argv={"cc": with_launcher(relocate.compiler_argv(p.toolchain.cc, flags), launcher),
              "cxx": with_launcher(relocate.compiler_argv(p.toolchain.cxx, flags), launcher),
              "ar": p.toolchain.ar},
    )


def command_env(unit: Unit, opts: Options, recipe: Recipe, strategy: Build | None,
                ctx: cmdline.Context, *, dirs: WorkDirs) -> dict[str, str]:
    """The environment a recipe's commands run in (built from scratch, not inherited), plus
    the prefix map where the toolchain reads it itself (Emscripten's ``EMCC_CFLAGS``)."""
    p = unit.platform
    launcher = compiler_launcher(opts.caller_env)
    recipe_env = {k: ctx.fill(v, f"recipe {recipe.name} env {k}")
                  for k, v in (strategy.env if strategy else {}).items()}
    env = build_env(opts.caller_env, platform_env=p.env, recipe_env=recipe_env,
                    unset=[*p.env_unset, *(strategy.env_unset if strategy else ())],
                    extra=launcher_env(p.toolchain.cc, launcher) or None)
    return relocate.compiler_env(env, p.toolchain.cc, relocate.prefix_map_flags(dirs.root))
