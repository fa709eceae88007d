"""One unit's build environment, made once before its steps run (:func:`prepare`); the build
runs what it says and the dry run prints it.

Every place that starts a compiler, a build command, a probe or a consumer's link for the unit
takes its environment from this value:

- ``family``: the compiler family of ``{cc}``;
- ``base``: the caller's variables through the one allow-list (``prebake.variables``), the
  fixed ones, the platform's ``env`` minus its ``env_unset``: what the host tools are found
  on, the CMake toolchain file resolves its compilers with, and the guards' links run in;
- ``launcher``: the compiler launcher the caller asked for (ccache), decided once;
- ``prefix_map``: ``-ffile-prefix-map`` for the unit's work folder, on ``{cc}``/``{cxx}``, in
  the toolchain file and in Emscripten's ``EMCC_CFLAGS``;
- ``host_tools``: per recipe, each host tool its commands name, found and verified on
  ``base``'s ``PATH``;
- ``platform_tools``: the platform's tools found on ``base``'s ``PATH`` with the launcher and
  the prefix map (``prebake.toolchain.platformtools``): the one value the CMake toolchain
  file, the configure tools folder and the Meson machine file are rendered from;
- per recipe, its :class:`Invocation`: the ``{placeholder}`` values and ``{cc}``… argv of its
  commands and the environment they run in (``base`` plus the recipe's ``env``, the
  launcher's variable, the toolchain environment's ``PATH`` and ``GIT_CEILING_DIRECTORIES``).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass

from prebake.bake.core_budget import LiveValues
from prebake.bake.layout import WorkDirs
from prebake.bake.options import Options
from prebake.bake.process import Context
from prebake.plan.units import Unit
from prebake.recipes.api import (
    Build,
    Recipe,
    host_tools_used,
    strategy_templates,
    template_fields,
)
from prebake.toolchain import configure, mesonfile, prefix_map, steady
from prebake.toolchain.cmakefile import file_path
from prebake.toolchain.environment import path_with
from prebake.toolchain.families import family_of_argv
from prebake.toolchain.hosttools import HOST_TOOLS, Found
from prebake.toolchain.launcher import compiler_launcher, with_launcher
from prebake.toolchain.platformtools import PlatformTools, is_cross
from prebake.toolchain.platformtools import for_unit as platform_tools_for
from prebake.variables import DEFAULT_PATH, dropped, sanitized
from prebake.workspace.model import Workspace


@dataclass(frozen=True)
class Invocation:
    """How one recipe's commands run: their placeholders' values and their environment."""

    context: Context
    env: Mapping[str, str]
    dropped: tuple[str, ...]  # the caller's flag variables that did not reach it (the log)
    toolchain_file: bool  # a command names {cmake_toolchain}: the build writes the file first
    meson_file: bool = False  # a command names {meson_cross}: the build writes that file first


@dataclass(frozen=True)
class BuildEnv:
    """The unit's environment, fixed for its run (see the module's docstring)."""

    base: Mapping[str, str]
    family: str | None  # the compiler family of {cc} (zig's runtime is built before commands)
    launcher: str | None
    prefix_map: tuple[str, ...]
    host_tools: Mapping[str, tuple[Found, ...]]  # recipe name -> its host tools, as found
    invocations: Mapping[str, Invocation]  # recipe name -> its commands' (Build recipes)
    platform_tools: PlatformTools

    def invocation(self, recipe: Recipe) -> Invocation:
        return self.invocations[recipe.name]


def prepare(ws: Workspace, unit: Unit, opts: Options, dirs: WorkDirs) -> BuildEnv:
    """The unit's :class:`BuildEnv`: the environment once, each recipe's commands from it."""
    p = unit.platform
    base = sanitized(opts.caller_env, platform_env=p.env, unset=p.env_unset)
    launcher = compiler_launcher(opts.caller_env)
    # the work folder (and the compiler's own, zig's) stay out of the objects
    flags = prefix_map.prefix_map_flags(dirs.root, p.toolchain.cc)
    tools = {r.name: tuple(HOST_TOOLS.find(t, base) for t in host_tools_used(r, p.name))
             for r in unit.recipes}
    argv = {"cc": with_launcher(prefix_map.compiler_argv(p.toolchain.cc, flags), launcher),
            "cxx": with_launcher(prefix_map.compiler_argv(p.toolchain.cxx, flags), launcher),
            "ar": p.toolchain.ar}
    # where a family takes the launcher through a variable (Emscripten's EM_COMPILER_WRAPPER),
    # with steady_cc in front of a family whose code follows pointer values
    extra = steady.compile_env(p.toolchain.cc, dirs.root, launcher) or None
    # {meson_cross}: the machine file and the wrap mode (a build never downloads)
    meson_args = mesonfile.setup_args(mesonfile.file_path(dirs.root, is_cross(p)), is_cross(p))
    invocations = {}
    for recipe in unit.recipes:
        strategy = recipe.strategy_for(p.name)
        if not isinstance(strategy, Build):
            continue
        work = dirs.recipe(recipe)
        fields = template_fields(strategy_templates(strategy))
        ctx = Context(
            host_tools={f.tool.name: _tool_path(f) for f in tools[recipe.name]},
            values=LiveValues({"src": str(work / "src"), "build": str(work / "build"),
                               "prefix": str(dirs.prefix), "deps_prefix": str(dirs.deps),
                               "version": ws.pins[recipe.pin],
                               "platform": p.name, "os": p.os, "arch": p.arch,
                               "macos_min": p.contract.macos_min or "",
                               "cmake_toolchain": str(file_path(dirs.root)),
                               "work": str(work), "python": sys.executable,
                               "recipe_dir": str(recipe.folder), **configure.triples(p)},
                              {"jobs": lambda: opts.cores.share(unit.id)}),
            pins=ws.pins, release=recipe.release_argv(ws.pins[recipe.pin]),
            argv={**argv, "meson_cross": meson_args},
            tools=configure.words(p, [t.name for t in host_tools_used(recipe, p.name)]))
        recipe_env = {k: ctx.fill(v, f"recipe {recipe.name} env {k}")
                      for k, v in strategy.env.items()}
        env = sanitized(opts.caller_env, platform_env=p.env, recipe_env=recipe_env,
                        unset=[*p.env_unset, *strategy.env_unset], extra=extra)
        if p.toolchain.environment:  # its cmake, python3, protoc… before the host's
            env["PATH"] = path_with(p.toolchain.environment, env.get("PATH", DEFAULT_PATH))
        if configure.uses_tools(fields):  # the platform's tools by one word each, first
            env["PATH"] = configure.path_with(dirs.root, env.get("PATH", DEFAULT_PATH))
        # git never looks above the unit's work folder: a build that asks git which commit it
        # is (onnxruntime's "ORT Build Info: git-commit-id=…") found the workspace's own
        # repository and shipped its HEAD as the dependency's commit, a different one after
        # every commit. A git source unpacked inside the work folder is still found.
        env["GIT_CEILING_DIRECTORIES"] = str(dirs.root)
        env = prefix_map.compiler_env(env, p.toolchain.cc, flags)
        if "meson_cross" in fields and "ninja" in ctx.host_tools:
            env["NINJA"] = ctx.host_tools["ninja"]  # meson runs the verified ninja
        invocations[recipe.name] = Invocation(
            ctx, env, tuple(dropped(opts.caller_env, env)),
            toolchain_file="cmake_toolchain" in fields, meson_file="meson_cross" in fields)
    fam = family_of_argv(p.toolchain.cc)
    made = platform_tools_for(p, work_root=dirs.root, prefix=dirs.prefix, deps=dirs.deps,
                              env=base, launcher=launcher, flags=flags, workspace_root=ws.root)
    return BuildEnv(base, fam.name if fam else None, launcher, flags, tools, invocations, made)


def _tool_path(found: Found) -> str:
    """``{host_tools[NAME]}``: the tool's verified path, or its name where it was not found
    (a dry run still shows the command; the build refuses it in preflight)."""
    return found.path if found.ok and found.path else found.tool.name
