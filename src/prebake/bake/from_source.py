"""A ``Build`` strategy: fetch the recipe's sources and run its commands in the unit's build
environment (``run.env``), with the CMake toolchain file written first when a command names
it."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from pathlib import Path

from prebake.bake.process import expand, run_logged
from prebake.bake.unitrun import UnitFailed, UnitRun
from prebake.recipes.api import Build, Recipe
from prebake.sources import materialize, render_source
from prebake.toolchain.cmakefile import ToolchainFileError, for_unit, toolchain_folder
from prebake.toolchain.steady import install as install_steady
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
    how = run.env.invocation(recipe)
    if how.toolchain_file:
        write_cmake_toolchain(run)
    tc = run.unit.platform.toolchain
    install_steady(tc.cc, run.dirs.root, in_environment=bool(tc.environment))
    fetch_sources(run, recipe, work, earlier)
    sources_in()
    ctx, env = how.context, how.env
    run.log.env(env, how.dropped)
    _warm_zig(run, env)
    (work / "build").mkdir(exist_ok=True)
    for i, command in enumerate(strategy.commands, 1):
        argv = expand(command, ctx, f"recipe {recipe.name} command {i}")
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
    if run.env.family != "zig":
        return
    tc = run.unit.platform.toolchain
    run.say("zig: building the target's C runtime from / (kept out of the build folders)")
    for line in warm(tc.cc, tc.cxx, env):
        run.log.write(f"# zig warm-up: {line}")


def write_cmake_toolchain(run: UnitRun) -> Path:
    """Write the platform's CMake toolchain file (and its wrappers) into the unit's work
    folder, before any source is fetched: a table that cannot make one fails here."""
    p, dirs, env = run.unit.platform, run.dirs, run.env
    try:
        made = for_unit(p, work_root=dirs.root, prefix=dirs.prefix, deps=dirs.deps,
                        env=env.base, launcher=env.launcher, flags=env.prefix_map,
                        workspace_root=run.ws.root)
    except ToolchainFileError as exc:
        raise UnitFailed(str(exc)) from None
    path = made.write(toolchain_folder(dirs.root))
    run.log.write(f"# CMake toolchain file {path}:\n{made.rendered()}")
    return path

