"""A ``Build`` strategy: fetch the recipe's sources and run its commands in the unit's build
environment (``run.env``), with the CMake toolchain file written first when a command names
it."""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from prebake.bake.guards import expand as expand_globs
from prebake.bake.process import Context, expand, run_logged
from prebake.bake.unitrun import UnitFailed, UnitRun
from prebake.errors import PrebakeError
from prebake.package.implib import import_libraries
from prebake.recipes.api import Build, Recipe, strategy_templates, template_fields
from prebake.sources import materialize_all, render_source
from prebake.toolchain import cmakefile, configure, mesonfile
from prebake.toolchain.cmakefile import ToolchainFileError, toolchain_folder
from prebake.toolchain.steady import install as install_steady
from prebake.toolchain.zigwarm import warm


def fetch_sources(run: UnitRun, recipe: Recipe, work: Path, earlier: Path | None = None
                  ) -> None:
    """Fetch what this unit's strategy uses of the recipe's sources into ``work``; an
    unpacked tree of ``earlier`` (the earlier build's work folder) is kept where it provably
    is what unpacking again would write."""
    ver = run.version(recipe)
    srcs = [render_source(s, ver, run.ws.pins)
            for s in recipe.fetched_sources(run.unit.platform.name, ver)]
    for s in srcs:
        run.say(f"{recipe.name}: fetching {getattr(s, 'url', getattr(s, 'path', ''))}")
    materialize_all(srcs, work, recipe.folder, run.cache, earlier=earlier,
                    log=lambda m: run.log.write(f"# {m}"))


def build_from_source(run: UnitRun, recipe: Recipe, strategy: Build, work: Path,
                      sources_in: Callable[[], None] = lambda: None,
                      earlier: Path | None = None) -> None:
    """``sources_in`` is called once the sources are in, before the first command (the unit
    deletes the earlier build's tree, ``earlier``, then, not beside the unpack)."""
    how = run.env.invocation(recipe)
    if how.toolchain_file:
        write_cmake_toolchain(run)
    if how.meson_file:
        write_meson_file(run)
    tc = run.unit.platform.toolchain
    install_steady(tc.cc, run.dirs.root, in_environment=bool(tc.environment))
    ctx, env = how.context, how.env
    fields = template_fields(strategy_templates(strategy))
    if configure.uses_tools(fields):
        write_tools_folder(run, ctx, env, configure.roles_named(fields))
    fetch_sources(run, recipe, work, earlier)
    sources_in()
    run.log.env(env, how.dropped)
    _warm_zig(run, env)
    (work / "build").mkdir(exist_ok=True)
    config_log = Path(ctx.fill(strategy.config_log, "config_log")) if strategy.config_log \
        else None
    for i, command in enumerate(strategy.commands, 1):
        argv = expand(command, ctx, f"recipe {recipe.name} command {i}")
        run.say(f"{recipe.name}: [{i}/{len(strategy.commands)}] {shlex.join(argv)[:120]}")
        before = _written(config_log)
        rc = run_logged(argv, cwd=work / "build", env=env, log=run.log, cancel=run.cancel,
                        on_line=run.progress.line)
        if rc != 0:
            what = "cancelled" if rc == -1 else f"exit status {rc}"
            if config_log is not None and rc != -1 and _written(config_log) not in (None,
                                                                                    before):
                _configure_failed(run, recipe, config_log)
            if how.meson_file and rc != -1 and (refused := mesonfile.setup_refused(
                    run.log.tail(), work / "src", run.unit.platform.name)):
                raise UnitFailed(f"{recipe.name} on {run.unit.platform.name}: {refused}")
            raise UnitFailed(f"{recipe.name}: command {i} failed ({what}): "
                             f"{shlex.join(argv)}\n--- last lines of {run.log.path} ---\n"
                             + run.log.tail())
    write_import_libs(run, strategy.import_libs)


def _written(path: Path | None) -> tuple[int, ...] | None:
    """What says a file was written: its inode, size and change times (``None``: absent).
    Taken before and after each command, it tells whether the failing command wrote the
    configure log, whatever the clock says (a ``make`` failing within a second of the
    ``configure`` before it wrote nothing there)."""
    try:
        st = path.stat() if path is not None else None
    except OSError:
        return None
    return None if st is None else (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns,
                                    st.st_ctime_ns)


def _configure_failed(run: UnitRun, recipe: Recipe, log: Path) -> None:
    """The failing command wrote the recipe's configure log: the unit fails with the log's
    last error in one line, the whole log kept beside the build log (masked like it)."""
    keep = run.log.path.with_name(run.log.path.stem + ".config.log")
    try:
        run.log.keep_copy(log, keep)
        with open(keep, "rb") as fh:
            fh.seek(max(0, fh.seek(0, os.SEEK_END) - configure.CONFIG_LOG_TAIL))
            tail = fh.read().decode("utf-8", errors="replace")
    except OSError:
        return  # gone or unreadable: the command's own failure says what happened
    raise UnitFailed(f"{recipe.name} on {run.unit.platform.name}: configure failed: "
                     f"{configure.last_error(tail)} (its log: {keep})")


def write_tools_folder(run: UnitRun, ctx: Context, env: Mapping[str, str],
                       named: Sequence[str]) -> None:
    """The platform's tools by one word each, first on the commands' PATH
    (``prebake.toolchain.configure``); an ``nm`` the commands name is proven to read the
    target's objects."""
    p, dirs, benv = run.unit.platform, run.dirs, run.env
    try:
        made = configure.render_for_unit(
            benv.platform_tools, named, {n: ctx.host_tools[n] for n in named
                                         if n in ctx.host_tools}, benv.base)
        folder = made.write(configure.tools_folder(dirs.root))
        run.log.write(f"# tools folder {folder} (first on PATH):\n{made.rendered()}")
        if "nm" in named:
            run.log.write(f"# {configure.prove_nm(folder, p, env)}")
    except configure.ToolsError as exc:
        raise UnitFailed(str(exc)) from None


def write_import_libs(run: UnitRun, table: Mapping[str, tuple[str, ...]]) -> None:
    """Import libraries written from each DLL's exports (``import_libs``: a key may be a
    glob, for a DLL whose name carries its ABI number, and must match one DLL)."""
    prefix = run.dirs.prefix
    for pattern, outputs in table.items():
        dlls = expand_globs([pattern], prefix)[0]
        if len(dlls) != 1:
            raise UnitFailed(f"import_libs: {pattern} matches {len(dlls)} files in the prefix "
                             f"({', '.join(dlls) or 'none'}); it must name one DLL")
        try:
            for line in import_libraries(prefix / dlls[0], [prefix / o for o in outputs],
                                         env=run.env.base):
                run.log.write(f"# {line}")
        except PrebakeError as exc:
            raise UnitFailed(f"import_libs: {exc}") from None


def _warm_zig(run: UnitRun, env: Mapping[str, str]) -> None:
    """zig builds its C runtime in the folder of the first link that needs it and records
    that folder in debug info (``prebake.toolchain.zigwarm``): build it from ``/`` first."""
    if run.env.family != "zig":
        return
    tc = run.unit.platform.toolchain
    run.say("zig: building the target's C runtime from / (kept out of the build folders)")
    for line in warm(tc.cc, tc.cxx, env):
        run.log.write(f"# zig warm-up: {line}")


def write_meson_file(run: UnitRun) -> Path:
    """Write the platform's Meson cross file (native file when not cross) into the unit's work
    folder before any source is fetched: what ``{meson_cross}`` names."""
    try:
        made = mesonfile.render(run.env.platform_tools)
    except PrebakeError as exc:
        raise UnitFailed(str(exc)) from None
    path = made.write(toolchain_folder(run.dirs.root))
    run.log.write(f"# Meson {'cross' if made.cross else 'native'} file {path}:\n"
                  f"{made.rendered()}")
    return path


def write_cmake_toolchain(run: UnitRun) -> Path:
    """Write the platform's CMake toolchain file (and its wrappers) into the unit's work
    folder, before any source is fetched: a table that cannot make one fails here."""
    try:
        made = cmakefile.render(run.env.platform_tools)
    except ToolchainFileError as exc:
        raise UnitFailed(str(exc)) from None
    path = made.write(toolchain_folder(run.dirs.root))
    run.log.write(f"# CMake toolchain file {path}:\n{made.rendered()}")
    return path
