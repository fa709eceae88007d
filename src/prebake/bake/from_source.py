"""A ``Build`` strategy: fetch the recipe's sources and run its commands, in the platform's
sanitized environment, with the CMake toolchain file written first when a command names it."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from pathlib import Path

from prebake.bake import placeholders
from prebake.bake.env import build_env, dropped
from prebake.bake.invocation import command_context, command_env
from prebake.bake.process import run_logged
from prebake.bake.unitrun import UnitFailed, UnitRun
from prebake.recipes.model import Build, Recipe, strategy_templates, template_fields
from prebake.sources import materialize, render_source
from prebake.toolchain.cmakefile import ToolchainFileError, for_unit, toolchain_folder
from prebake.toolchain.families import family_of_argv
from prebake.toolchain.launcher import compiler_launcher
from prebake.toolchain.zigwarm import warm


def fetch_sources(run: UnitRun, recipe: Recipe, work: Path, earlier: Path | None = None
                  ) -> None:
    """Fetch what this unit's strategy uses of the recipe's sources into ``work``; an
    unpacked tree of ``earlier`` (the earlier build's work folder) is kept where it provably
    is what unpacking again would write."""
    ver = run.version(recipe)
    for src in recipe.fetched_sources(run.unit.platform.name, ver):
        s = render_source(src, ver, run.ws.pins)
        run.say(f"{recipe.name}: fetching {getattr(s, 'url', getattr(s, 'path', ''))}")
        materialize(s, work, recipe.folder, run.cache, earlier=earlier,
                    log=lambda m: run.log.write(f"# {m}"))


def build_from_source(run: UnitRun, recipe: Recipe, strategy: Build, work: Path,
                      sources_in: Callable[[], None] = lambda: None,
                      earlier: Path | None = None) -> None:
    """``sources_in`` is called once the sources are in, before the first command (the unit
    deletes the earlier build's tree, ``earlier``, then, not beside the unpack)."""
    if "cmake_toolchain" in template_fields(strategy_templates(strategy)):
        write_cmake_toolchain(run)
    fetch_sources(run, recipe, work, earlier)
    sources_in()
    ctx = command_context(run.ws, run.unit, run.opts, recipe, work, run.dirs)
    env = command_env(run.unit, run.opts, recipe, strategy, ctx, dirs=run.dirs)
    run.log.env(env, dropped(run.opts.caller_env, env))
    _warm_zig(run, env)
    (work / "build").mkdir(exist_ok=True)
    for i, command in enumerate(strategy.commands, 1):
        argv = placeholders.expand(command, ctx, f"recipe {recipe.name} command {i}")
        run.say(f"{recipe.name}: [{i}/{len(strategy.commands)}] {shlex.join(argv)[:120]}")
        rc = run_logged(argv, cwd=work / "build", env=env, log=run.log, cancel=run.cancel,
                        on_line=run.progress.line)
        if rc != 0:
            what = "cancelled" if rc == -1 else f"exit status {rc}"
            raise UnitFailed(f"{recipe.name}: command {i} failed ({what}): "
                             f"{shlex.join(argv)}\n--- last lines of {run.log.path} ---\n"
                             + run.log.tail())


def _warm_zig(run: UnitRun, env: Mapping[str, str]) -> None:
    """zig builds its C runtime in the folder of the first link that needs it and records
    that folder in debug info (``prebake.toolchain.zigwarm``): build it from ``/`` first."""
    tc = run.unit.platform.toolchain
    fam = family_of_argv(tc.cc)
    if fam is None or fam.name != "zig":
        return
    run.say("zig: building the target's C runtime from / (kept out of the build folders)")
    for line in warm(tc.cc, tc.cxx, env):
        run.log.write(f"# zig warm-up: {line}")


def write_cmake_toolchain(run: UnitRun) -> Path:
    """Write the platform's CMake toolchain file (and its wrappers) into the unit's work
    folder, before any source is fetched: a table that cannot make one fails here."""
    p, dirs = run.unit.platform, run.dirs
    env = build_env(run.opts.caller_env, platform_env=p.env, unset=p.env_unset)
    try:
        made = for_unit(p, work_root=dirs.root, prefix=dirs.prefix, deps=dirs.deps, env=env,
                        launcher=compiler_launcher(run.opts.caller_env),
                        workspace_root=run.ws.root)
    except ToolchainFileError as exc:
        raise UnitFailed(str(exc)) from None
    path = made.write(toolchain_folder(dirs.root))
    run.log.write(f"# CMake toolchain file {path}:\n{made.rendered()}")
    return path

