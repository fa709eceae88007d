"""How a recipe's commands are invoked: their ``{placeholder}`` values and their environment
(the build runs them, the dry run prints them; both come from here)."""

from __future__ import annotations

import sys
from pathlib import Path

from prebake.bake import placeholders
from prebake.bake.core_budget import LiveValues
from prebake.bake.env import build_env
from prebake.bake.layout import WorkDirs
from prebake.bake.options import Options
from prebake.plan.model import Unit
from prebake.recipes.model import (
    Build,
    Recipe,
    host_tools_used,
    strategy_templates,
    template_fields,
)
from prebake.toolchain import configure, prefix_map
from prebake.toolchain.cmakefile import file_path
from prebake.toolchain.environment import path_with
from prebake.toolchain.hosttools import HOST_TOOLS
from prebake.toolchain.launcher import compiler_launcher, launcher_env, with_launcher
from prebake.toolchain.probe import DEFAULT_PATH, probe_env
from prebake.workspace.model import Workspace


def command_context(ws: Workspace, unit: Unit, opts: Options, recipe: Recipe, work: Path,
                    dirs: WorkDirs) -> placeholders.Context:
    """The ``{src}``, ``{prefix}``, ``{jobs}``… values and ``{cc}``… argv of a recipe's
    commands (the dry run prints the same)."""
    p = unit.platform
    launcher = compiler_launcher(opts.caller_env)
    flags = prefix_map.prefix_map_flags(dirs.root)  # the work folder stays out of the objects
    return placeholders.Context(
        host_tools=host_tool_paths(unit, opts, recipe),
        values=LiveValues({"src": str(work / "src"), "build": str(work / "build"),
                           "prefix": str(dirs.prefix), "deps_prefix": str(dirs.deps),
                           "version": ws.pins[recipe.pin],
                           "platform": p.name, "os": p.os, "arch": p.arch,
                           "macos_min": p.contract.macos_min or "",
                           "cmake_toolchain": str(file_path(dirs.root)),
                           "work": str(work), "python": sys.executable,
                           "recipe_dir": str(recipe.folder), **configure.triples(p)},
                          {"jobs": lambda: opts.cores.share(unit.id)}),
        pins=ws.pins,
        release=recipe.release_argv(ws.pins[recipe.pin]),
        tools=configure.words(p, [t.name for t in host_tools_used(recipe, p.name)]),
        argv={"cc": with_launcher(prefix_map.compiler_argv(p.toolchain.cc, flags), launcher),
              "cxx": with_launcher(prefix_map.compiler_argv(p.toolchain.cxx, flags), launcher),
              "ar": p.toolchain.ar},
    )


def host_tool_env(unit: Unit, opts: Options) -> dict[str, str]:
    """The variables a host tool is looked up with: the build's ``PATH``."""
    return probe_env(unit.platform.env, unit.platform.env_unset, opts.caller_env or None)


def host_tool_paths(unit: Unit, opts: Options, recipe: Recipe) -> dict[str, str]:
    """``{host_tools[NAME]}``: each tool's verified path (its name where it was not found,
    so a dry run still shows the command; the build refuses it in preflight)."""
    env = host_tool_env(unit, opts)
    out = {}
    for tool in host_tools_used(recipe, unit.platform.name):
        found = HOST_TOOLS.find(tool, env)
        out[tool.name] = found.path if found.ok and found.path else tool.name
    return out


def command_env(unit: Unit, opts: Options, recipe: Recipe, strategy: Build | None,
                ctx: placeholders.Context, *, dirs: WorkDirs) -> dict[str, str]:
    """The environment a recipe's commands run in (built from scratch, not inherited), plus
    the prefix map where the toolchain reads it itself (Emscripten's ``EMCC_CFLAGS``)."""
    p = unit.platform
    launcher = compiler_launcher(opts.caller_env)
    recipe_env = {k: ctx.fill(v, f"recipe {recipe.name} env {k}")
                  for k, v in (strategy.env if strategy else {}).items()}
    env = build_env(opts.caller_env, platform_env=p.env, recipe_env=recipe_env,
                    unset=[*p.env_unset, *(strategy.env_unset if strategy else ())],
                    extra=launcher_env(p.toolchain.cc, launcher) or None)
    if p.toolchain.environment:  # its cmake, python3, protoc… before the host's
        env["PATH"] = path_with(p.toolchain.environment, env.get("PATH", DEFAULT_PATH))
    if strategy is not None and configure.uses_tools(template_fields(strategy_templates(
            strategy))):  # the platform's tools by one word each, before everything
        env["PATH"] = configure.path_with(dirs.root, env.get("PATH", DEFAULT_PATH))
    # git never looks above the unit's work folder: a build that asks git which commit it is
    # (onnxruntime's "ORT Build Info: git-commit-id=…") found the workspace's own repository
    # and shipped its HEAD as the dependency's commit, a different one after every commit.
    # A git source unpacked inside the work folder is still found.
    env["GIT_CEILING_DIRECTORIES"] = str(dirs.root)
    return prefix_map.compiler_env(env, p.toolchain.cc, prefix_map.prefix_map_flags(dirs.root))
